import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGGREGATOR_GROUP } from '../../src/events/groups.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { waitUntil } from '../support/wait.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 1 });
});
afterEach(() => f.close());

const aggHash = (postId: number) => f.redis.hgetall(f.keys.agg({ type: 'post', id: postId }));

describe('aggregator.applyBatch', () => {
  it('sums a batch per entity and field into the aggregation hash and marks it dirty', async () => {
    for (let u = 1; u <= 5; u++) await f.set(u, 10);
    await f.set(1, 10, false);
    await f.set(2, 10, true, 'FAV');
    await f.set(3, 11);
    expect(await f.aggregator.applyBatch(await f.batchOf(0))).toBe('applied');
    expect(await aggHash(10)).toEqual({ 1: '4', 2: '1' });
    expect(await aggHash(11)).toEqual({ 1: '1' });
    expect((await f.redis.smembers(f.keys.dirty(0))).sort()).toEqual(['post:10', 'post:11']);
  });

  it('skips a batch delivered again, and applies only the new part of an overlapping one', async () => {
    for (let u = 1; u <= 4; u++) await f.set(u, 20);
    const first = await f.batchOf(0);
    expect(await f.aggregator.applyBatch(first)).toBe('applied');
    expect(await f.aggregator.applyBatch(first)).toBe('skipped');
    expect(await aggHash(20)).toEqual({ 1: '4' });

    for (let u = 5; u <= 7; u++) await f.set(u, 20);
    // Redelivery after a crash can hand over old and new entries together.
    expect(await f.aggregator.applyBatch(await f.batchOf(0))).toBe('applied');
    expect(await aggHash(20)).toEqual({ 1: '7' });
  });
});

describe('the aggregator as a consumer group', () => {
  it('consumes what is written, acknowledges it, and the flush makes counts equal the facts', async () => {
    const subscription = f.aggregator.subscribe(f.eventLog(7));
    await subscription.start();
    try {
      for (let u = 1; u <= 40; u++) await f.set(u, 30 + (u % 3));
      for (let u = 1; u <= 10; u++) await f.set(u, 30 + (u % 3), false);
      await waitUntil(
        async () =>
          (await f.redis.xpending(f.keys.outbox(0), AGGREGATOR_GROUP))[0] === 0 &&
          (await f.redis.hget(f.keys.aggState(0), 'pos:ob')) === (await f.redis.xrevrange(f.keys.outbox(0), '+', '-', 'COUNT', 1))[0]![0],
      );
    } finally {
      await subscription.stop();
    }
    await f.flusher.foldPartitions(f.allPartitions);
    for (const post of [30, 31, 32]) {
      const facts = await f.factsOf(post);
      expect((await f.countersOf(post))?.[1]).toBe(facts.likes);
    }
    expect((await f.factsOf(30)).likes + (await f.factsOf(31)).likes + (await f.factsOf(32)).likes).toBe(30);
  });
});
