// Folds aggregated deltas into the SDS counters, partition by partition, one bounded Lua
// call at a time (see lua/foldDirtyCounters-8.lua). Stopping between calls loses nothing:
// the pass resumes from the `folding` set next time.
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

export const FOLD_BATCH = 200;

export interface FoldResult {
  folded: number;
  rebuilt: number;
  calls: number;
}

export function createFlusher(deps: { redis: ScriptedRedis; keys: Keys }) {
  const scripts = createScripts(deps.redis, deps.keys);

  const foldOnce = (partition: number, limit: number) => scripts.foldDirtyCounters({ partition, limit });

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
