// Waiting for the asynchronous parts of a running test app to catch up.

import { caughtUpEverywhere } from '../../src/events/caughtUp.js';
import { PERSISTER_GROUP } from '../../src/events/groups.js';
import { outboxLag } from '../../src/events/redisStreams.js';
import type { RedisClient } from '../../src/redis/client.js';
import type { TestApp } from './app.js';
import { waitUntil } from './wait.js';

/** Whether the fact persister has written every outbox event to PostgreSQL. */
export async function persisterCaughtUp(t: TestApp, redis: RedisClient = t.app.redis): Promise<boolean> {
  return caughtUpEverywhere(await outboxLag(redis, t.app.keys), PERSISTER_GROUP);
}

/** Waits until lists and user counters (which follow PostgreSQL) include every write so far. */
export const waitForPersister = (t: TestApp, timeoutMs = 15_000) =>
  waitUntil(() => persisterCaughtUp(t), { what: 'the fact persister to catch up', timeoutMs });
