// Folds aggregated deltas into the packed counters, partition by partition, one bounded Lua
// call at a time (see lua/foldDirtyCounters-8.lua), the partition's buffered views added up
// first (lua/foldViews-3.lua). Stopping between calls loses nothing: the pass
// resumes from the `folding` set next time.
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

export const FOLD_BATCH = 200;

export interface FoldResult {
  folded: number;
  rebuilt: number;
  calls: number;
}

/** Buffered views per call (a call adds up each entity's in one write of its counters and sketch). */
const VIEWS_PER_CALL = 2000;
/** Calls per fold at most: a backlog of views never holds the likes' counters back for long. */
const VIEW_CALLS_PER_FOLD = 10;

export function createFlusher(deps: { redis: ScriptedRedis; keys: Keys; viewsExactUpTo: number }) {
  const scripts = createScripts(deps.redis, deps.keys);

  /** When each partition's buffer was last emptied (Redis's time); unknown until this process empties it. */
  const emptiedAt = new Map<number, number>();

  /**
   * Adds up the partition's buffered views, at most VIEW_CALLS_PER_FOLD calls: when its buffer
   * was last emptied (every view recorded before then is added up), 0 if never by this process.
   */
  async function foldViews(partition: number): Promise<number> {
    for (let call = 0; call < VIEW_CALLS_PER_FOLD; call++) {
      const { taken, at } = await scripts.foldViews({ partition, exactUpTo: deps.viewsExactUpTo, limit: VIEWS_PER_CALL });
      if (taken < VIEWS_PER_CALL) {
        emptiedAt.set(partition, at);
        break;
      }
    }
    return emptiedAt.get(partition) ?? 0;
  }

  /**
   * One call of the partition's pass; a new pass's asOf is at most `asOfAtMost`, when its buffer
   * of views was last emptied (added up now unless given).
   */
  const foldOnce = async (partition: number, limit: number, asOfAtMost?: number) =>
    scripts.foldDirtyCounters({ partition, limit, asOfAtMost: asOfAtMost ?? (await foldViews(partition)) });

  return {
    foldOnce,
    foldViews,

    /**
     * Completes one flush pass on each partition. Partitions are folded concurrently (their
     * calls share round trips); each one loops until its pass is done.
     */
    async foldPartitions(partitions: readonly number[], options: { limit?: number; shouldStop?: () => boolean } = {}): Promise<FoldResult> {
      const total: FoldResult = { folded: 0, rebuilt: 0, calls: 0 };
      await Promise.all(
        partitions.map(async (partition) => {
          // Only a pass's first call can start a new one: the views are added up once per pass.
          const asOfAtMost = await foldViews(partition);
          for (;;) {
            const { folded, remaining, rebuilt } = await foldOnce(partition, options.limit ?? FOLD_BATCH, asOfAtMost);
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
