// Users' counters as the read path sees them: the user's packed counters in Redis, a cache of the exact
// rows in PostgreSQL (src/db/userCounters.ts), written with the row's version so a stale
// write never wins. A page's users cost one round trip (all their packed counters plus the asOf); users
// missing from the cache cost one SQL query and are cached again.

import type { UserCounterStore, UserCountRow } from '../db/userCounters.js';
import { USER_COUNTERS, type UserCounterValues, ZERO_USER_COUNTERS } from '../domain/counters.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { unpackCounters } from './packedCounters.js';

export interface UserCounts extends UserCounterValues {
  /** Every change acknowledged before this instant is included; null when not known yet. */
  asOf: Date | null;
}

const fromPacked = (v: number[]) => Object.fromEntries(USER_COUNTERS.map((field, slot) => [field, v[slot]!])) as UserCounterValues;

export function createUserCounters(deps: { redis: ScriptedRedis; keys: Keys; store: UserCounterStore }) {
  const { redis, keys, store } = deps;
  const scripts = createScripts(redis, keys);

  /**
   * Caches rows unless a newer version is cached; `repair` also overwrites the same version.
   * `changed`: the rows come from a change (their users are pushed to live subscribers even
   * when nothing was cached before), not from filling the cache on a read.
   */
  async function cache(rows: readonly UserCountRow[], options: { repair?: boolean; changed?: boolean } = {}): Promise<void> {
    await Promise.all(
      rows.map((r) =>
        scripts.setUserCounters({
          userId: r.userId,
          version: r.version,
          counters: r,
          repair: options.repair ?? false,
          changed: options.changed ?? false,
        }),
      ),
    );
  }

  return {
    cache,

    /** Recomputes a user's counters from PostgreSQL's base tables and caches the result. */
    async rebuild(userId: number): Promise<UserCountRow> {
      const row = await store.recompute(userId);
      await cache([row]);
      return row;
    },

    async load(userIds: readonly number[]): Promise<UserCounts[]> {
      const [raw, asOfRaw] = await Promise.all([
        Promise.all(userIds.map((id) => redis.getBuffer(keys.userCounters(id)))),
        redis.get(keys.usersAsOf()),
      ]);
      const asOf = asOfRaw ? new Date(Number(asOfRaw)) : null;
      const values = raw.map((r) => unpackCounters(r));
      const missing = userIds.filter((_, i) => values[i] === null);
      const found = missing.length > 0 ? await store.byIds(missing) : [];
      // Users without a row have counted nothing yet: cache zeros at version 0.
      const rows = [
        ...found,
        ...missing.filter((id) => !found.some((r) => r.userId === id)).map((userId) => ({ userId, ...ZERO_USER_COUNTERS, version: 0n })),
      ];
      if (rows.length > 0) await cache(rows);
      const byId = new Map(rows.map((r) => [r.userId, r]));
      return userIds.map((id, i) => {
        const packed = values[i];
        return { ...(packed ? fromPacked(packed) : (byId.get(id) ?? ZERO_USER_COUNTERS)), asOf };
      });
    },

    /**
     * Publishes how far the user counters are complete (the least-covered partition decides),
     * then pushes the users whose counters changed since the last call, with that asOf.
     */
    async publishAsOf(): Promise<number> {
      const covered = await Promise.all(Array.from({ length: keys.partitions }, (_, p) => scripts.persistedAsOf(p)));
      const asOf = Math.min(...covered);
      if (asOf > 0) await redis.set(keys.usersAsOf(), asOf);
      const published = Number((await redis.get(keys.usersAsOf())) ?? 0);
      await Promise.all(
        Array.from({ length: keys.partitions }, (_, partition) => scripts.publishUserCounts({ partition, asOf: published })),
      );
      return asOf;
    },
  };
}

export type UserCounters = ReturnType<typeof createUserCounters>;
