// Waiting for the asynchronous parts of a running test app to catch up.

import { PERSISTER_GROUP } from '../../src/events/groups.js';
import type { RedisClient } from '../../src/redis/client.js';
import { callOnKey } from '../../src/redis/keyedCommand.js';
import type { TestApp } from './app.js';
import { waitUntil } from './wait.js';

/** The consumer groups reading each partition's outbox (XINFO GROUPS rows), null where it has no stream. */
export async function outboxGroups(t: TestApp, redis: RedisClient = t.app.redis): Promise<(unknown[][] | null)[]> {
  const groups: (unknown[][] | null)[] = [];
  for (let p = 0; p < t.app.keys.partitions; p++) {
    const stream = t.app.keys.outbox(p);
    groups.push((await redis.exists(stream)) === 0 ? null : ((await callOnKey(redis, stream, 'XINFO', 'GROUPS', stream)) as unknown[][]));
  }
  return groups;
}

/** Whether the fact persister has written every outbox event to PostgreSQL. */
export async function persisterCaughtUp(t: TestApp, redis: RedisClient = t.app.redis): Promise<boolean> {
  for (const groups of await outboxGroups(t, redis)) {
    if (groups === null) continue;
    const group = groups.find((g) => g[1] === PERSISTER_GROUP);
    if (group?.[group.indexOf('pending') + 1] !== 0 || group[group.indexOf('lag') + 1] !== 0) return false;
  }
  return true;
}

/** Waits until lists and user counters (which follow PostgreSQL) include every write so far. */
export const waitForPersister = (t: TestApp, timeoutMs = 15_000) =>
  waitUntil(() => persisterCaughtUp(t), { what: 'the fact persister to catch up', timeoutMs });
