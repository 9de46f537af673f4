import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AGGREGATOR_GROUP } from '../../src/counters/aggregator.js';
import { createCounterFixture, type CounterFixture } from '../support/counterFixture.js';
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
      await waitUntil(async () => (await f.redis.xpending(stream, AGGREGATOR_GROUP))[0] === 0 && (await f.redis.xlen(stream)) > 0
        && (await f.redis.hget(f.keys.aggState(0), 'pos:ob')) === (await f.redis.xrevrange(stream, '+', '-', 'COUNT', 1))[0]![0],
        { what: 'the survivor to catch up' });
    } finally {
      await survivor.stop();
    }
    expect(await f.redis.hget(f.keys.agg({ type: 'post', id: POST }), '1')).toBe('29');
    await f.flusher.foldPartitions(f.allPartitions);
    expect((await f.sdsOf(POST))?.[1]).toBe(29);
    expect((await f.factsOf(POST)).likes).toBe(29);
  });
});
