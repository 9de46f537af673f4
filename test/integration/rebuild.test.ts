import { Queue } from 'bullmq';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRebuilder } from '../../src/counters/rebuild.js';
import { KINDS } from '../../src/domain/kinds.js';
import { createRebuildRequests, createRebuildWorker, REBUILD_QUEUE, rebuildBackoffMs, rebuildJobId } from '../../src/jobs/rebuildJobs.js';
import { createLogger } from '../../src/log.js';
import { createMetrics } from '../../src/metrics.js';
import { createRedis } from '../../src/redis/client.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { spawnTsx } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 1 });
});
afterEach(() => f.close());

const logger = createLogger({ logLevel: process.env.LOG_LEVEL ?? 'silent' });

async function aggregateUpTo(end = '+') {
  const applied = await f.redis.hget(f.keys.aggState(0), 'pos:ob');
  const batch = await f.batchOf(0, applied ? `(${applied}` : '-', end);
  if (batch.entries.length > 0) await f.aggregator.applyBatch(batch);
}
const newestId = async () => (await f.redis.xrevrange(f.keys.outbox(0), '+', '-', 'COUNT', 1))[0]![0];

describe('rebuilding counters from facts', () => {
  it('ends exact when events are still in flight (the aggregator paused before them)', async () => {
    const post = { type: 'post' as const, id: 7 };
    for (let u = 1; u <= 10; u++) await f.set(u, 7);
    await aggregateUpTo();
    await f.flusher.foldPartitions([0]);
    // More likes and a fav; the aggregator has applied only some of them when the rebuild runs.
    for (let u = 11; u <= 14; u++) await f.set(u, 7);
    await f.set(2, 7, false);
    await aggregateUpTo(await newestId());
    for (let u = 15; u <= 17; u++) await f.set(u, 7);
    await f.set(3, 7, true, 'FAV');

    const rebuilder = createRebuilder({ redis: f.redis, keys: f.keys, lockMs: 1000 });
    const { counters, watermark } = await rebuilder.rebuild(post);
    expect(counters.slice(1, 3)).toEqual([16, 1]);
    expect(watermark).toBe(await newestId());

    // The paused aggregator resumes with events the rebuild already counted, then newer ones.
    await f.set(18, 7);
    await aggregateUpTo();
    await f.flusher.foldPartitions([0]);
    await f.flusher.foldPartitions([0]);
    expect((await f.countersOf(7))?.slice(1, 3)).toEqual([17, 1]);
    expect(await f.factsOf(7)).toEqual({ likes: 17, favs: 1 });
  });

  it('counts reactions in their own slots, exact with their events in flight', async () => {
    const post = { type: 'post' as const, id: 9 };
    const [heart, rocket] = [KINDS.reaction('HEART')!.slot!, KINDS.reaction('ROCKET')!.slot!];
    for (let u = 1; u <= 5; u++) await f.react(u, 9, 'HEART');
    await f.set(1, 9);
    await aggregateUpTo();
    await f.flusher.foldPartitions([0]);
    await f.react(6, 9, 'ROCKET');
    await f.react(2, 9, 'HEART', false);
    await aggregateUpTo(await newestId()); // applied, not folded
    await f.react(7, 9, 'ROCKET'); // not even aggregated

    const { counters } = await createRebuilder({ redis: f.redis, keys: f.keys, lockMs: 1000 }).rebuild(post);
    expect([counters[1], counters[heart], counters[rocket]]).toEqual([1, 4, 2]);
    await aggregateUpTo();
    await f.flusher.foldPartitions([0]);
    await f.flusher.foldPartitions([0]);
    const stored = (await f.countersOf(9))!;
    expect([stored[1], stored[heart], stored[rocket]]).toEqual([1, 4, 2]);
    expect(stored).toHaveLength(rocket + 1); // the string ends at its last non-zero slot
  });

  it('lets one holder at a time rebuild an entity, at most 3 times per 10 s', async () => {
    const rebuilder = createRebuilder({ redis: f.redis, keys: f.keys, lockMs: 60_000 });
    const post = { type: 'post' as const, id: 8 };
    const first = await rebuilder.acquire(post);
    expect(first.status).toBe('acquired');
    expect((await rebuilder.acquire(post)).status).toBe('locked');
    if (first.status === 'acquired') await rebuilder.release(post, first.token);
    for (let i = 0; i < 2; i++) {
      const again = await rebuilder.acquire(post);
      expect(again.status).toBe('acquired');
      if (again.status === 'acquired') await rebuilder.release(post, again.token);
    }
    const fourth = await rebuilder.acquire(post);
    expect(fourth.status).toBe('rate-limited');
    expect(fourth.status !== 'acquired' && fourth.retryInMs).toBeGreaterThan(5000);
  });

  it('backs off exponentially from 500 ms to 30 s', () => {
    expect([1, 2, 3, 4, 7, 20].map(rebuildBackoffMs)).toEqual([500, 1000, 2000, 4000, 30_000, 30_000]);
  });
});

describe('a rebuild worker killed mid-rebuild', () => {
  it('leaves a stalled job that another worker retries, with an exact result', async () => {
    for (let u = 1; u <= 12; u++) await f.set(u, 9);
    await aggregateUpTo();
    await f.flusher.foldPartitions([0]);
    await f.redis.del(f.keys.counters({ type: 'post' as const, id: 9 }));

    const metrics = createMetrics({ lag: async () => [], redisRoundTrips: () => 0 });
    const dying = spawnTsx('test/fixtures/dyingRebuildWorker.ts', [], {
      PREFIX: f.prefix,
      PARTITIONS: String(f.partitions),
      REDIS_URL: TEST_REDIS_URL,
      REBUILD_LOCK_MS: '1500',
      JOB_LOCK_MS: '1000',
    });
    await dying.waitFor(/ready/);
    const jobsRedis = createRedis(TEST_REDIS_URL, logger, { forJobs: true });
    const requests = createRebuildRequests(jobsRedis, f.keys, logger);
    const queue = new Queue(REBUILD_QUEUE, { connection: jobsRedis, prefix: f.keys.bullPrefix() });
    try {
      requests.request({ type: 'post' as const, id: 9 });
      requests.request({ type: 'post' as const, id: 9 }); // collapses into the same job
      await dying.waitFor(/taken acquired/);
      dying.child.kill('SIGKILL');
      await dying.exited;

      // More likes land while nobody holds the job.
      for (let u = 13; u <= 15; u++) await f.set(u, 9);
      const survivor = createRebuildWorker({
        connection: jobsRedis,
        keys: f.keys,
        rebuilder: createRebuilder({ redis: f.redis, keys: f.keys, lockMs: 1500 }),
        logger,
        lockMs: 1000,
        metrics,
        rebuildUser: async () => {
          throw new Error('no user rebuilds in this test');
        },
      });
      survivor.start();
      try {
        const jobGone = async () => {
          const job = await queue.getJob(rebuildJobId({ type: 'post' as const, id: 9 }));
          return job === undefined;
        };
        await waitUntil(async () => (await jobGone()) && (await f.countersOf(9)) !== null, {
          timeoutMs: 20_000,
          what: 'the retried rebuild',
        });
      } finally {
        await survivor.stop();
      }
      await aggregateUpTo();
      await f.flusher.foldPartitions([0]);
      expect((await f.countersOf(9))?.[1]).toBe(15);
      expect(await metrics.registry.getSingleMetricAsString('tally_rebuilds_total')).toMatch(/via="job",outcome="done"} 1/);
    } finally {
      await requests.close();
      await queue.close();
      jobsRedis.disconnect();
      if (dying.child.exitCode === null) dying.child.kill('SIGKILL');
    }
  }, 30_000);
});
