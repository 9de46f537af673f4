// Waiting for the asynchronous parts of a running test app to catch up.

import { caughtUpEverywhere } from '../../src/events/caughtUp.js';
import { PERSISTER_GROUP } from '../../src/events/groups.js';
import { outboxLag } from '../../src/events/redisStreams.js';
import type { RedisClient } from '../../src/redis/client.js';
import type { TestApp } from './app.js';
import { waitUntil } from './wait.js';

/** The consumer groups reading each partition's outbox (their names), null where it has no stream. */
export async function outboxGroups(t: TestApp, redis: RedisClient = t.app.redis): Promise<(string[] | null)[]> {
  const lags = await outboxLag(redis, t.app.keys);
  return Promise.all(
    Array.from({ length: t.app.keys.partitions }, async (_, p) =>
      (await redis.exists(t.app.keys.outbox(p))) === 0 ? null : lags.filter((l) => l.partition === p).map((l) => l.group),
    ),
  );
}

/** Whether the fact persister has written every outbox event to PostgreSQL. */
export async function persisterCaughtUp(t: TestApp, redis: RedisClient = t.app.redis): Promise<boolean> {
  return caughtUpEverywhere(await outboxLag(redis, t.app.keys), PERSISTER_GROUP);
}

/** Waits until lists and user counters (which follow PostgreSQL) include every write so far. */
export const waitForPersister = (t: TestApp, timeoutMs = 15_000) =>
  waitUntil(() => persisterCaughtUp(t), { what: 'the fact persister to catch up', timeoutMs });
