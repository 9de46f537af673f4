// Online rebuild of one entity's counters from its facts, under a lock and a rate limit.
// The steps are exported one by one so the job worker (and its crash test) compose them.

import { randomUUID } from 'node:crypto';
import { type EntityRef, entityName } from '../domain/entities.js';
import { POST_RELATION_SLOTS } from '../domain/relations.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';

export const REBUILDS_PER_WINDOW = 3;
export const REBUILD_WINDOW_MS = 10_000;

export type Acquired = { status: 'acquired'; token: string } | { status: 'locked' | 'rate-limited'; retryInMs: number };

export function createRebuilder(deps: { redis: ScriptedRedis; keys: Keys; lockMs: number }) {
  const { redis, keys } = deps;

  return {
    /** Takes the entity's rebuild lock and one slot of its rate limit. */
    async acquire(entity: EntityRef): Promise<Acquired> {
      const token = randomUUID();
      const reply = await redis.acquireRebuild(
        keys.rebuildLock(entity),
        keys.rebuildRate(entity),
        token,
        deps.lockMs,
        REBUILD_WINDOW_MS,
        REBUILDS_PER_WINDOW,
      );
      if (!Array.isArray(reply)) throw new Error(`acquireRebuild refused its arguments (code ${reply})`);
      const [status, ttl = 0] = reply;
      if (status === 1) return { status: 'acquired', token };
      return { status: status === 0 ? 'locked' : 'rate-limited', retryInMs: Math.max(ttl, 1) };
    },

    /** Recounts from the facts and records the watermark, in one atomic step. */
    async rebuild(entity: EntityRef): Promise<{ counters: number[]; watermark: string | null }> {
      const partition = keys.partitionOf(entity);
      const reply = await redis.rebuildCounters(
        keys.counters(entity),
        keys.agg(entity),
        keys.aggState(partition),
        keys.outbox(partition),
        keys.rebuilt(partition),
        entityName(entity),
        keys.prefix,
        keys.partitionTag(partition),
        POST_RELATION_SLOTS,
      );
      return { counters: reply.slice(0, 5) as number[], watermark: reply[5] || null };
    },

    async release(entity: EntityRef, token: string): Promise<void> {
      await redis.releaseLease(keys.rebuildLock(entity), token);
    },
  };
}

export type Rebuilder = ReturnType<typeof createRebuilder>;
