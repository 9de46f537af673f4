// Restores one entity's facts and views (and its packed counters, for a counted type) from PostgreSQL after Redis lost its
// data, before anything is decided against them: a write on an entity Redis does not hold
// yet calls this first, and so does the recovery for every entity. One restorer at a time
// per entity (a lock in Redis); an entity already restored, or in a ready partition, is left
// alone, so facts written since are never overwritten with PostgreSQL's older copy.

import { randomUUID } from 'node:crypto';
import type { Rebuilder } from '../counters/rebuild.js';
import type { EntityFactCursor, FactStore } from '../db/facts.js';
import type { ViewStore } from '../db/views.js';
import { type EntityRef, entityName } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
import { unavailable } from '../errors.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import type { Readiness } from './readiness.js';

const PAGE = 2000;
const LOCK_MS = 15_000;
const POLL_MS = 50;

export interface EntityRestoreDeps {
  redis: ScriptedRedis;
  keys: Keys;
  facts: FactStore;
  /** The views persisted in PostgreSQL (src/counters/viewSnapshots.ts), added back before the counters are rebuilt. */
  views: ViewStore;
  viewsExactUpTo: number;
  readiness: Readiness;
  rebuilder: Rebuilder;
  /**
   * True once PostgreSQL holds every event the durable log still has. With Kafka, events
   * relayed before the loss may still be on their way to PostgreSQL: restoring before they
   * arrive would lose them. The Redis outbox went with the data, so there it is always true.
   */
  durableLogSettled: () => Promise<boolean>;
  logger: Logger;
}

export function createEntityRestorer(deps: EntityRestoreDeps) {
  const { redis, keys, facts, readiness, logger } = deps;
  const scripts = createScripts(redis, keys);

  async function copyFacts(entity: EntityRef, renew: () => Promise<void>): Promise<number> {
    let after: EntityFactCursor | null = null;
    let copied = 0;
    for (;;) {
      const page = await facts.activeOf(entity.type, entity.id, after, PAGE);
      if (page.length === 0) return copied;
      // Auto-pipelining sends the page's writes together.
      await Promise.all(page.map((f) => scripts.writeFact({ relation: f.kind, entity, userId: f.userId, active: true })));
      copied += page.length;
      after = page.at(-1)!;
      await renew();
    }
  }

  /** Restores the entity while holding its lock; false when another process holds it. */
  async function restoreLocked(entity: EntityRef): Promise<boolean> {
    const lock = keys.restoreLock(entity);
    const token = randomUUID();
    if ((await redis.set(lock, token, 'PX', LOCK_MS, 'NX')) !== 'OK') return false;
    const renew = async () => {
      if (!(await scripts.renewLease(lock, token, LOCK_MS))) throw new Error(`lost the restore lock of ${entityName(entity)}`);
    };
    try {
      // Checked under the lock: a restorer that finished just before must not be repeated.
      if (await readiness.entityReady(entity)) return true;
      const started = Date.now();
      const copied = await copyFacts(entity, renew);
      const [views] = await deps.views.of(entity.type, [entity.id]);
      if (views) await scripts.restoreViews({ entity, exactUpTo: deps.viewsExactUpTo, total: views.total, sketch: views.sketch });
      if (TYPES.withCounters.has(entity.type)) await deps.rebuilder.rebuild(entity);
      await readiness.markRestored(entity);
      logger.debug({ entity: entityName(entity), facts: copied, ms: Date.now() - started }, 'restored from PostgreSQL');
      return true;
    } finally {
      await scripts.releaseLease(lock, token);
    }
  }

  return {
    /**
     * Resolves once Redis holds the entity's facts, restoring them if no one else is; throws a
     * retryable error when that takes longer than `timeoutMs`.
     */
    async restore(entity: EntityRef, timeoutMs = 10_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        if (await readiness.entityReady(entity)) return;
        if ((await deps.durableLogSettled()) && (await restoreLocked(entity))) return;
        await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      }
      throw unavailable(`${entity.type} ${entity.id} is being restored after a Redis restart; try again shortly`, 1000);
    },
  };
}

export type EntityRestorer = ReturnType<typeof createEntityRestorer>;
