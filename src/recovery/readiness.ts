// Which partitions' facts Redis holds (lua/includes/readiness.lua). After Redis lost its
// data no partition is ready: writes and reads of an entity wait for its facts to come back
// from PostgreSQL (src/recovery/entityRestore.ts), and a recovery (src/recovery/recover.ts)
// restores them all, then marks every partition ready again.
import { type EntityRef, entityName } from '../domain/entities.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';

export function createReadiness(redis: ScriptedRedis, keys: Keys) {
  const all = () => Array.from({ length: keys.partitions }, (_, p) => p);

  return {
    /** Partitions whose facts Redis does not hold: none, unless Redis lost its data and no recovery finished since. */
    async notReady(): Promise<number[]> {
      const present = await Promise.all(all().map((p) => redis.exists(keys.ready(p))));
      return all().filter((p) => present[p] === 0);
    },

    /** Whether Redis holds this entity's facts (its partition is ready, or it was restored). */
    async entityReady(entity: EntityRef): Promise<boolean> {
      const partition = keys.partitionOf(entity);
      const [ready, restored] = await Promise.all([
        redis.exists(keys.ready(partition)),
        redis.sismember(keys.restored(partition), entityName(entity)),
      ]);
      return ready === 1 || restored === 1;
    },

    async markRestored(entity: EntityRef): Promise<void> {
      await redis.sadd(keys.restored(keys.partitionOf(entity)), entityName(entity));
    },

    /** Every partition is whole: the restored sets have done their job. */
    async markAllReady(): Promise<void> {
      const since = String(Date.now());
      await Promise.all(all().map((p) => redis.set(keys.ready(p), since)));
      await Promise.all([...all().map((p) => redis.del(keys.restored(p), keys.viewsRestored(p))), redis.del(keys.legacyRecovering())]);
    },
  };
}

export type Readiness = ReturnType<typeof createReadiness>;
