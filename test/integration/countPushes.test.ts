// Live counts at the source: the flush pass that folds a change publishes the entities it
// changed, with their new values and the partition's asOf, once per pass, on the partition's
// shard channel; the user counters publish the users whose counters changed.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POST_SLOTS } from '../../src/domain/counters.js';
import { createScripts } from '../../src/redis/scripts.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { waitUntil } from '../support/wait.js';

interface Push {
  asOf: number;
  at: number;
  counts: Record<string, number[]>;
}

let f: CounterFixture;
let subscriber: Redis;
const received: { channel: string; push: Push }[] = [];

beforeAll(async () => {
  f = createCounterFixture({ partitions: 2 });
  subscriber = new Redis(TEST_REDIS_URL);
  subscriber.on('smessage', (channel: string, message: string) => received.push({ channel, push: JSON.parse(message) }));
  await subscriber.ssubscribe(f.keys.countsChannel(0), f.keys.countsChannel(1), f.keys.userCountsChannel(0), f.keys.userCountsChannel(1));
});

afterAll(async () => {
  subscriber?.disconnect();
  await f?.close();
});

/** Aggregates everything in the outbox and completes a flush pass on every partition. */
async function aggregateAndFlush() {
  for (const p of f.allPartitions) await f.aggregator.applyBatch(await f.batchOf(p));
  return f.flusher.foldPartitions(f.allPartitions, { limit: 2 });
}

const pushesOf = (name: string) => received.filter((r) => name in r.push.counts).map((r) => r.push);

describe('count pushes', () => {
  it('a pass pushes each changed post once, with its new counters and an asOf that covers them', async () => {
    const post = f.postIn(0);
    const other = f.postIn(0, post);
    for (let u = 1; u <= 5; u++) await f.set(u, post);
    await f.set(1, other);
    await f.set(1, other, false); // liked and unliked in one pass: its counters do not change
    const before = received.length;
    const started = Date.now();
    // A limit of 2 entities per call: the pass takes several calls, and pushes once at its end.
    await aggregateAndFlush();
    await waitUntil(async () => pushesOf(`post:${post}`).length > 0, { what: 'the push' });
    const pushes = pushesOf(`post:${post}`);
    expect(pushes).toHaveLength(1);
    expect(pushes[0]!.counts[`post:${post}`]![POST_SLOTS.like]).toBe(5);
    expect(pushes[0]!.asOf).toBeGreaterThanOrEqual(started - 1000);
    expect(received.slice(before).every((r) => r.channel === f.keys.countsChannel(0))).toBe(true);
    expect(pushesOf(`post:${other}`)).toHaveLength(0);
  });

  it('a pass with nothing changed pushes nothing; the next change pushes again with a later asOf', async () => {
    const post = f.postIn(1);
    await f.set(7, post);
    await aggregateAndFlush();
    await waitUntil(async () => pushesOf(`post:${post}`).length === 1, { what: 'the first push' });
    const count = received.length;
    await aggregateAndFlush();
    await f.set(8, post);
    await aggregateAndFlush();
    await waitUntil(async () => pushesOf(`post:${post}`).length === 2, { what: 'the second push' });
    const [first, second] = pushesOf(`post:${post}`);
    // One subscriber connection gets messages in the order Redis published them: a push of the
    // empty pass would have come before this one.
    expect(received.slice(count).map((r) => r.push)).toEqual([second]);
    expect(second!.counts[`post:${post}`]![POST_SLOTS.like]).toBe(2);
    expect(second!.asOf).toBeGreaterThanOrEqual(first!.asOf);
  });

  it('users whose counters changed are pushed once, on their user partition', async () => {
    const scripts = createScripts(f.redis, f.keys);
    const counters = { followings: 1, followers: 2, posts: 3, likesReceived: 4, favsReceived: 5 };
    expect(await scripts.setUserCounters({ userId: 42, version: 1n, counters, repair: false, changed: true })).toBe(true);
    // The same values again (a newer row of equal counts) queue nothing new.
    await scripts.setUserCounters({ userId: 42, version: 2n, counters, repair: false });
    const pushed = await Promise.all(f.allPartitions.map((partition) => scripts.publishUserCounts({ partition, asOf: 1234 })));
    expect(pushed.reduce((a, b) => a + b, 0)).toBe(1);
    await waitUntil(async () => pushesOf('42').length > 0, { what: 'the user push' });
    expect(pushesOf('42')).toMatchObject([{ asOf: 1234, counts: { 42: [1, 2, 3, 4, 5] } }]);
    expect(await Promise.all(f.allPartitions.map((partition) => scripts.publishUserCounts({ partition, asOf: 1235 })))).toEqual([0, 0]);
    // A read filling an empty cache is no change: nobody is pushed for it.
    await scripts.setUserCounters({ userId: 43, version: 1n, counters: { ...counters, posts: 9 }, repair: false });
    expect(await Promise.all(f.allPartitions.map((partition) => scripts.publishUserCounts({ partition, asOf: 1236 })))).toEqual([0, 0]);
  });
});
