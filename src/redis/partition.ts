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

/**
 * Positions of `items` in groups that can each be one multi-key command (an MGET, a script
 * call): on a Redis Cluster a command's keys must share a slot, so one group per partition;
 * a single Redis takes any keys in one command, so the whole page is one group. Either way a
 * page's reads stay one round trip; on a single Redis they are also a handful of commands.
 */
export function commandGroups<T>(items: readonly T[], partitionOf: (item: T, index: number) => number, perPartition: boolean): number[][] {
  if (!perPartition) return items.length === 0 ? [] : [items.map((_, i) => i)];
  const groups = new Map<number, number[]>();
  items.forEach((item, i) => {
    const partition = partitionOf(item, i);
    const group = groups.get(partition);
    if (group) group.push(i);
    else groups.set(partition, [i]);
  });
  return [...groups.values()];
}
