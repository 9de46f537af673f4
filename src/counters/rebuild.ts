// Online rebuild of one entity's counters from its facts, under a lock and a rate limit.
// The steps are exported one by one so the job worker (and its crash test) compose them.
import { randomUUID } from 'node:crypto';
import type { EntityRef } from '../domain/entities.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

export const REBUILDS_PER_WINDOW = 3;
export const REBUILD_WINDOW_MS = 10_000;

export type Acquired = { status: 'acquired'; token: string } | { status: 'locked' | 'rate-limited'; retryInMs: number };

export function createRebuilder(deps: { redis: ScriptedRedis; keys: Keys; lockMs: number }) {
  const { keys } = deps;
  const scripts = createScripts(deps.redis, keys);

  return {
    /** Takes the entity's rebuild lock and one slot of its rate limit. */
    async acquire(entity: EntityRef): Promise<Acquired> {
      const token = randomUUID();
      const right = await scripts.acquireRebuild({
        entity,
        holder: token,
        lockMs: deps.lockMs,
        windowMs: REBUILD_WINDOW_MS,
        allowed: REBUILDS_PER_WINDOW,
      });
      return right.status === 'acquired' ? { status: 'acquired', token } : right;
    },

    /** Recounts from the facts and records the watermark, in one atomic step. */
    rebuild: (entity: EntityRef) => scripts.rebuildCounters(entity),

    async release(entity: EntityRef, token: string): Promise<void> {
      await scripts.releaseLease(keys.rebuildLock(entity), token);
    },
  };
}

export type Rebuilder = ReturnType<typeof createRebuilder>;
