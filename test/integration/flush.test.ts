import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { packCounters } from '../../src/counters/packedCounters.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 1 });
});
afterEach(() => f.close());

const POSTS = Array.from({ length: 30 }, (_, i) => 100 + i);

/** Aggregates every outbox entry not applied yet. */
async function aggregateAll() {
  const applied = await f.redis.hget(f.keys.aggState(0), 'pos:ob');
  const batch = await f.batchOf(0, applied ? `(${applied}` : '-');
  if (batch.entries.length > 0) await f.aggregator.applyBatch(batch);
}

async function expectCountsEqualFacts(posts: number[]) {
  for (const post of posts) {
    const facts = await f.factsOf(post);
    const counters = await f.countersOf(post);
    expect({ post, likes: counters?.[1], favs: counters?.[2] }).toEqual({ post, ...facts });
  }
}

describe('the flush', () => {
  it('stopped midway loses nothing and doubles nothing, and publishes asOf only when the pass is done', async () => {
    for (const [i, post] of POSTS.entries()) {
      for (let u = 1; u <= (i % 6) + 1; u++) await f.set(u, post);
      if (i % 4 === 0) await f.set(99, post, true, 'FAV');
    }
    await aggregateAll();
    const beforeFlush = Date.now();

    const first = await f.flusher.foldOnce(0, 7);
    expect(first).toMatchObject({ folded: 7, remaining: 23 });
    expect(await f.redis.get(f.keys.flushed(0))).toBeNull(); // the pass is not complete

    // The worker stops here. Meanwhile likes and unlikes land on folded and unfolded posts.
    for (const post of POSTS.slice(0, 15)) {
      await f.set(50, post);
      await f.set(1, post, false);
    }
    await aggregateAll();

    // A restarted worker finishes the interrupted pass, then runs a fresh one.
    await f.flusher.foldPartitions([0], { limit: 4 });
    expect(Number(await f.redis.get(f.keys.flushed(0)))).toBeGreaterThanOrEqual(beforeFlush);
    await f.flusher.foldPartitions([0]);
    await expectCountsEqualFacts(POSTS);
  });

  it('rebuilds missing or malformed counters from the facts without counting in-flight events twice', async () => {
    const [gone, garbled] = [POSTS[0]!, POSTS[1]!];
    for (let u = 1; u <= 5; u++) {
      await f.set(u, gone);
      await f.set(u, garbled);
    }
    await aggregateAll();
    await f.flusher.foldPartitions([0]);
    await f.redis.del(f.keys.counters({ type: 'post', id: gone }));
    await f.redis.set(f.keys.counters({ type: 'post', id: garbled }), 'garbage');

    // Events written and partly aggregated: some still in the log when the fold rebuilds.
    for (let u = 6; u <= 8; u++) await f.set(u, gone);
    await f.set(6, garbled);
    const inFlightFrom = (await f.redis.xrevrange(f.keys.outbox(0), '+', '-', 'COUNT', 1))[0]![0];
    for (let u = 9; u <= 10; u++) await f.set(u, gone);
    await f.aggregator.applyBatch(await f.batchOf(0, `(${await f.redis.hget(f.keys.aggState(0), 'pos:ob')}`, inFlightFrom));

    const rebuilt = await f.flusher.foldPartitions([0]);
    expect(rebuilt.rebuilt).toBe(2);
    // After the rebuild, more events: the aggregator meets the watermark inside one batch.
    await f.set(11, gone);
    await f.set(3, garbled, false);
    await aggregateAll();
    await f.flusher.foldPartitions([0]);
    await f.flusher.foldPartitions([0]);
    expect(await f.factsOf(gone)).toEqual({ likes: 11, favs: 0 });
    expect(await f.factsOf(garbled)).toEqual({ likes: 5, favs: 0 });
    await expectCountsEqualFacts([gone, garbled]);
  });

  it('clamps a counter at zero instead of wrapping below it', async () => {
    const post = POSTS[2]!;
    await f.set(1, post);
    await f.set(1, post, false);
    // Counters that say 0 although the like above was counted (e.g. restored from an old copy).
    await f.redis.set(f.keys.counters({ type: 'post', id: post }), packCounters([0, 0, 0, 0, 0]));
    await aggregateAll();
    await f.flusher.foldPartitions([0]);
    expect(await f.countersOf(post)).toEqual([0, 0, 0, 0, 0]);
  });

  it('folds into a slot past the stored string (a kind registered later) and trims it again at zero', async () => {
    const post = { type: 'post' as const, id: POSTS[3]! };
    await f.redis.set(f.keys.counters(post), packCounters([0, 3, 0, 0, 0]));
    const foldDelta = async (slot: number, delta: number) => {
      await f.redis.hincrby(f.keys.agg(post), String(slot), delta);
      await f.redis.sadd(f.keys.dirty(0), `post:${post.id}`);
      await f.flusher.foldPartitions([0]);
    };
    await foldDelta(7, 2);
    expect(await f.countersOf(post.id)).toEqual([0, 3, 0, 0, 0, 0, 0, 2]);
    expect(await f.redis.strlen(f.keys.counters(post))).toBe(32);
    await foldDelta(7, -2);
    expect(await f.countersOf(post.id)).toEqual([0, 3, 0, 0, 0]);
  });
});
