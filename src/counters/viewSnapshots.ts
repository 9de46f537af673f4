// Views persisted to PostgreSQL (entity_views), so that they survive a Redis loss: a job adds
// up each partition's buffered views (as the flush does), takes its entities
// whose views changed (lua/takeViewSnapshots-2.lua) and writes their views as they stand,
// every VIEWS_PERSIST_INTERVAL_MS. A snapshot replaces the row only if it
// is newer, so a late or repeated write is harmless. What a Redis loss costs: the views
// recorded since their entity's last snapshot. After the loss the entity restore adds the rest
// back (src/recovery/entityRestore.ts).
import type { ViewStore } from '../db/views.js';
import { parseEntityName } from '../domain/entities.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

/** Entities per script call and per INSERT. */
const BATCH = 500;

export function createViewSnapshots(deps: {
  redis: ScriptedRedis;
  keys: Keys;
  store: ViewStore;
  /** Adds up a partition's buffered views (the flusher's). */
  foldViews: (partition: number) => Promise<unknown>;
}) {
  const { redis, keys, store } = deps;
  const scripts = createScripts(redis, keys);

  /** Persists every pending entity of the partition, its buffered views added up first: how many. */
  async function persistPartition(partition: number): Promise<number> {
    await deps.foldViews(partition);
    let written = 0;
    for (;;) {
      const { at, taken } = await scripts.takeViewSnapshots({ partition, limit: BATCH });
      if (taken.length === 0) return written;
      const rows = taken.map(({ entity, total, unique, sketch }) => {
        const { type, id } = parseEntityName(entity);
        return { entityType: type, entityId: id, total, viewers: unique, sketch, snapshotMs: at };
      });
      try {
        await store.save(rows);
      } catch (error) {
        // Taken but not written: pending again, for the next run.
        await redis.sadd(keys.viewsPending(partition), ...taken.map((t) => t.entity));
        throw error;
      }
      written += rows.length;
      if (taken.length < BATCH) return written;
    }
  }

  return {
    /** Persists the pending views of these partitions: how many entities. */
    async persistPartitions(partitions: readonly number[]): Promise<number> {
      let written = 0;
      for (const partition of partitions) written += await persistPartition(partition);
      return written;
    },
  };
}

export type ViewSnapshots = ReturnType<typeof createViewSnapshots>;
