// The user counters verifier (job scheduler, every USER_VERIFY_INTERVAL_MS): samples users —
// those in recent events plus random ones — and checks (1) the stored counters against the
// base tables, from one snapshot, repairing drift through the rebuild job, and (2) the Redis
// cache against the stored row, by version, re-caching what is stale or wrong.

import type { UserCounterStore, UserCountRow } from '../db/userCounters.js';
import { USER_COUNTERS } from '../domain/counters.js';
import { type EntityRef, USER } from '../domain/entities.js';
import { recentEvents } from '../events/recentEvents.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { unpackCounters } from './packedCounters.js';
import type { UserCounters } from './userCounters.js';

const RECENT_PER_PARTITION = 200;

export interface UserVerifyReport {
  checked: number;
  counterDrift: number[];
  staleCache: number[];
}

export function createUserVerifier(deps: {
  redis: ScriptedRedis;
  keys: Keys;
  store: UserCounterStore;
  userCounters: UserCounters;
  requestRebuild: (entity: EntityRef) => void;
  metrics: Metrics;
  logger: Logger;
  sampleSize: number;
}) {
  const { redis, keys, store } = deps;

  async function candidates(): Promise<number[]> {
    const recent = (await recentEvents(redis, keys, RECENT_PER_PARTITION)).flatMap((e) => [e.userId, e.authorId]);
    return [...new Set([...recent, ...(await store.randomUserIds(deps.sampleSize))])];
  }

  /** Whether the cached packed counters are older than, or differs from, the stored row. */
  async function cacheIsStale(row: UserCountRow): Promise<boolean> {
    const [raw, version] = await Promise.all([
      redis.getBuffer(keys.userCounters(row.userId)),
      redis.get(keys.userCountersVersion(row.userId)),
    ]);
    const cached = unpackCounters(raw);
    if (!cached || version === null) return false; // not cached: the next read fills it
    if (BigInt(version) < row.version) return true;
    return BigInt(version) === row.version && USER_COUNTERS.some((f, i) => cached[i] !== row[f]);
  }

  return {
    async run(): Promise<UserVerifyReport> {
      const ids = await candidates();
      const { stored, actual } = await store.snapshot(ids);
      const byId = new Map(stored.map((r) => [r.userId, r]));
      const counterDrift = ids.filter((id) => {
        const expected = actual.get(id);
        const row = byId.get(id);
        if (!expected) return false;
        return USER_COUNTERS.some((f) => (row?.[f] ?? 0) !== expected[f]);
      });
      for (const id of counterDrift) deps.requestRebuild({ type: USER, id });

      const healthy = stored.filter((r) => !counterDrift.includes(r.userId));
      const stale = (await Promise.all(healthy.map(async (r) => ((await cacheIsStale(r)) ? r : null)))).filter(
        (r): r is UserCountRow => r !== null,
      );
      await deps.userCounters.cache(stale, { repair: true });

      const report = { checked: ids.length, counterDrift, staleCache: stale.map((r) => r.userId) };
      deps.metrics.drift.inc({ kind: 'user_counters' }, counterDrift.length);
      deps.metrics.drift.inc({ kind: 'user_cache' }, stale.length);
      const level = counterDrift.length + stale.length > 0 ? 'warn' : 'info';
      deps.logger[level](report, 'user counters verified');
      return report;
    },
  };
}

export type UserVerifier = ReturnType<typeof createUserVerifier>;
