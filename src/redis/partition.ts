// Which partition an entity or user lives in. Every key of one entity carries `{pN}` as
// its hash tag, so multi-key scripts stay in one Redis Cluster slot, and N is also the
// event-log partition. The hash must never change for a deployment: it decides where
// existing keys are.

/** 32-bit FNV-1a: tiny, fast and stable across processes and versions. */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

export const entityPartition = (entityType: string, entityId: number, partitions: number) =>
  fnv1a32(`${entityType}:${entityId}`) % partitions;

export const userPartition = (userId: number, partitions: number) => fnv1a32(`user:${userId}`) % partitions;
