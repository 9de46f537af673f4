// Job schedulers on real Redis: what a deployment that changes an interval gets.
import { afterAll, describe, expect, it } from 'vitest';
import { createScheduledJobs } from '../../src/jobs/scheduledJobs.js';
import { createLogger } from '../../src/log.js';
import { createRedis } from '../../src/redis/client.js';
import { createKeys } from '../../src/redis/keys.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const prefix = uniquePrefix();
const logger = createLogger({ logLevel: 'silent' });
const connection = createRedis(TEST_REDIS_URL, logger, { forJobs: true });
afterAll(async () => {
  connection.disconnect();
  await deleteKeys(prefix);
});

const jobsEvery = (everyMs: number, run: () => Promise<unknown>) =>
  createScheduledJobs({
    queue: 'test-scheduled',
    connection,
    keys: createKeys(prefix, 1),
    logger,
    schedules: [{ id: 'check', everyMs, data: {} }],
    run,
  });

describe('createScheduledJobs', () => {
  it('keeps a new, shorter interval after a run that started late', async () => {
    // A deployment that ran every 5 minutes; its scheduler stays in Redis.
    const before = jobsEvery(300_000, async () => {});
    await before.start();
    await before.stop();

    // Now every second, and the first run takes 2.5 s: the next starts over an interval late,
    // and the one after it must still come within about a second, not up to 5 minutes later.
    const starts: number[] = [];
    const after = jobsEvery(1000, async () => {
      starts.push(Date.now());
      if (starts.length === 1) await new Promise((r) => setTimeout(r, 2500)); // a slow run: what is tested
    });
    await after.start();
    try {
      await waitFor(
        async () => starts.length,
        (n) => n >= 3,
        { what: 'three runs', timeoutMs: 8000 },
      );
    } finally {
      await after.stop();
    }
    expect(starts[2]! - starts[1]!).toBeLessThan(2500);
  }, 20_000);
});
