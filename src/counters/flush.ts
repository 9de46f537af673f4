// Folds aggregated deltas into the SDS counters, partition by partition, one bounded Lua
// call at a time (see lua/foldDirtyCounters-7.lua). Stopping between calls loses nothing:
// the pass resumes from the `folding` set next time.
import { POST_RELATION_SLOTS } from '../domain/relations.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';

export const FOLD_BATCH = 200;

export interface FoldResult {
  folded: number;
  rebuilt: number;
  calls: number;
}

export function createFlusher(deps: { redis: ScriptedRedis; keys: Keys }) {
  const { redis, keys } = deps;

  async function foldOnce(partition: number, limit: number) {
    const reply = await redis.foldDirtyCounters(
      keys.dirty(partition),
      keys.folding(partition),
      keys.flushState(partition),
      keys.flushed(partition),
      keys.aggState(partition),
      keys.outbox(partition),
      keys.rebuilt(partition),
      limit,
      keys.aggPrefix(partition),
      keys.countersPrefix(partition),
      keys.prefix,
      keys.partitionTag(partition),
      POST_RELATION_SLOTS,
    );
    if (!Array.isArray(reply)) throw new Error(`foldDirtyCounters refused its arguments (code ${reply})`);
    const [folded, remaining, rebuilt] = reply;
    return { folded, remaining, rebuilt };
  }

  return {
    foldOnce,

    /**
     * Completes one flush pass on each partition. Partitions are folded concurrently (their
     * calls share round trips); each one loops until its pass is done.
     */
    async foldPartitions(partitions: readonly number[], options: { limit?: number; shouldStop?: () => boolean } = {}): Promise<FoldResult> {
      const total: FoldResult = { folded: 0, rebuilt: 0, calls: 0 };
      await Promise.all(
        partitions.map(async (partition) => {
          for (;;) {
            const { folded, remaining, rebuilt } = await foldOnce(partition, options.limit ?? FOLD_BATCH);
            total.folded += folded;
            total.rebuilt += rebuilt;
            total.calls += 1;
            if (remaining === 0 || options.shouldStop?.()) return;
          }
        }),
      );
      return total;
    },
  };
}

export type Flusher = ReturnType<typeof createFlusher>;
