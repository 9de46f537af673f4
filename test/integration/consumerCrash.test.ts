import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGGREGATOR_GROUP } from '../../src/events/groups.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { spawnTsx } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 1, leaseMs: 1000 });
});
afterEach(() => f.close());

describe('a consumer that dies after applying a batch but before acknowledging', () => {
  it('has its batch redelivered to another member, which skips it: counts stay exact', async () => {
    const POST = 40;
    for (let u = 1; u <= 25; u++) await f.set(u, POST);

    const crashing = spawnTsx('test/fixtures/crashingAggregator.ts', [], {
      REDIS_KEY_PREFIX: f.prefix,
      PARTITIONS: String(f.partitions),
      CONSUMER_LEASE_MS: String(f.leaseMs),
      AGGREGATOR_BATCH_SIZE: '1000',
      REDIS_URL: TEST_REDIS_URL,
      NODE_ENV: 'test',
    });
    await crashing.waitFor(/applied 25/);
    crashing.child.kill('SIGKILL');
    await crashing.exited;

    const stream = f.keys.outbox(0);
    const [pendingAfterCrash] = await f.redis.xpending(stream, AGGREGATOR_GROUP);
    expect(pendingAfterCrash).toBe(25); // applied, never acknowledged
    expect(await f.redis.hget(f.keys.agg({ type: 'post', id: POST }), '1')).toBe('25');

    // More likes arrive while the partition has no owner.
    for (let u = 26; u <= 30; u++) await f.set(u, POST);
    await f.set(1, POST, false);

    // A surviving member takes the partition once the dead one's lease expires, reclaims
    // its pending entries (XAUTOCLAIM), skips what was applied and applies the rest.
    const survivor = f.aggregator.subscribe(f.eventLog());
    await survivor.start();
    try {
      await waitUntil(
        async () =>
          (await f.redis.xpending(stream, AGGREGATOR_GROUP))[0] === 0 &&
          (await f.redis.xlen(stream)) > 0 &&
          (await f.redis.hget(f.keys.aggState(0), 'pos:ob')) === (await f.redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0],
        { what: 'the survivor to catch up' },
      );
    } finally {
      await survivor.stop();
    }
    expect(await f.redis.hget(f.keys.agg({ type: 'post', id: POST }), '1')).toBe('29');
    await f.flusher.foldPartitions(f.allPartitions);
    expect((await f.countersOf(POST))?.[1]).toBe(29);
    expect((await f.factsOf(POST)).likes).toBe(29);
  });
});

describe('a worker restarted under the same MEMBER_ID after kill -9', () => {
  it('takes its partitions back at once, not when its old lease runs out', async () => {
    const POST = 41;
    for (let u = 1; u <= 10; u++) await f.set(u, POST);
    const leaseMs = 20_000; // the old lease would hold the partition this long
    const crashing = spawnTsx('test/fixtures/crashingAggregator.ts', [], {
      REDIS_KEY_PREFIX: f.prefix,
      PARTITIONS: String(f.partitions),
      CONSUMER_LEASE_MS: String(leaseMs),
      MEMBER_ID: 'worker-a',
      REDIS_URL: TEST_REDIS_URL,
      NODE_ENV: 'test',
    });
    await crashing.waitFor(/applied 10/);
    crashing.child.kill('SIGKILL');
    await crashing.exited;
    expect(await f.redis.pttl(f.keys.lease(0, AGGREGATOR_GROUP))).toBeGreaterThan(10_000);

    // Under another name it would wait for the lease to run out; under its own it takes it now.
    const stranger = f.aggregator.subscribe(f.eventLog(100, 'worker-b'));
    await stranger.start();
    expect(stranger.assignedPartitions()).toEqual([]);
    await stranger.stop();

    const restarted = f.aggregator.subscribe(f.eventLog(100, 'worker-a'));
    const started = Date.now();
    await restarted.start();
    try {
      expect(restarted.assignedPartitions()).toEqual([0]);
      await waitUntil(async () => (await f.redis.xpending(f.keys.outbox(0), AGGREGATOR_GROUP))[0] === 0, {
        what: 'the restarted worker to finish its pending batch',
        timeoutMs: 5000,
      });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(await f.redis.hget(f.keys.agg({ type: 'post', id: POST }), '1')).toBe('10'); // applied once
    } finally {
      await restarted.stop();
    }
  });
});
