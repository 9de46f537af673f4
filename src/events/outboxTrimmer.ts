// Keeps an outbox stream bounded: entries every consumer group has acknowledged, and that
// are older than the retention window (kept for replay), are trimmed. An entry some group
// has not consumed yet is never removed.
import type { Cluster, Redis } from 'ioredis';
import { callOnKey } from '../redis/keyedCommand.js';
import { comparePositions } from './types.js';

type Reply = (string | number | Reply)[];

const asRecord = (flat: Reply): Record<string, unknown> => {
  const record: Record<string, unknown> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) record[String(flat[i])] = flat[i + 1];
  return record;
};

/** The lowest id any group still needs; entries below it are consumed by every group. */
export async function consumedBelow(redis: Redis | Cluster, stream: string): Promise<string | null> {
  const groups = ((await callOnKey(redis, stream, 'XINFO', 'GROUPS', stream)) as Reply[]).map(asRecord);
  if (groups.length === 0) return null; // nobody has read it yet: keep everything
  let lowest: string | null = null;
  for (const group of groups) {
    let needed = String(group['last-delivered-id']);
    if (Number(group.pending) > 0) {
      // Null when the group acknowledged its last entries since XINFO: then nothing is pending.
      const [, minPending] = (await redis.call('XPENDING', stream, String(group.name))) as [number, string | null];
      needed = minPending ?? needed;
    }
    if (lowest === null || comparePositions(needed, lowest) < 0) lowest = needed;
  }
  return lowest;
}

/** Trims consumed entries older than `retentionMs`; returns how many were removed. */
export async function trimOutbox(redis: Redis | Cluster, stream: string, retentionMs: number): Promise<number> {
  const consumed = await consumedBelow(redis, stream);
  if (consumed === null) return 0;
  const cutoff = `${Date.now() - retentionMs}-0`;
  const minId = comparePositions(consumed, cutoff) < 0 ? consumed : cutoff;
  return (await redis.call('XTRIM', stream, 'MINID', minId)) as number;
}
