// The newest events of every partition, read from the outbox without consuming them: where
// the background checks (reconciliation, the user counters verifier) look first, since
// recently changed entities are the likeliest to have drifted.
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { decodeOutboxEntry } from './outboxCodec.js';
import type { CounterEvent } from './types.js';

export async function recentEvents(redis: ScriptedRedis, keys: Keys, perPartition: number): Promise<CounterEvent[]> {
  const partitions = await Promise.all(
    Array.from({ length: keys.partitions }, async (_, p) => {
      const entries = (await redis.xrevrange(keys.outbox(p), '+', '-', 'COUNT', perPartition)) as [string, string[]][];
      return entries.flatMap(([id, fields]) => decodeOutboxEntry(id, p, fields) ?? []);
    }),
  );
  return partitions.flat();
}
