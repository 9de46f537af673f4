// Rebuild jobs on BullMQ: a post's counters from its relation sets, a user's from PostgreSQL. The job id is derived from the entity, so concurrent requests for
// one entity collapse into one job. A job that finds the entity locked or its rate limit
// used up waits (delayed) instead of failing; a job that fails is retried with exponential
// backoff from 500 ms to 30 s. A worker that dies mid-job leaves a stalled job that BullMQ
// hands to another worker once its lock expires.

import { type ConnectionOptions, DelayedError, Queue, Worker } from 'bullmq';
import { LRUCache } from 'lru-cache';
import type { Rebuilder } from '../counters/rebuild.js';
import { type EntityRef, USER } from '../domain/entities.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Keys } from '../redis/keys.js';

export const REBUILD_QUEUE = 'tally-rebuild';
const MAX_ATTEMPTS = 12;
const BACKOFF_FIRST_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** A process asks for the same entity's rebuild at most this often (reads of a hot post). */
const REQUEST_THROTTLE_MS = 1000;

export type RebuildJobData = EntityRef;

export const rebuildJobId = (entity: EntityRef) => `${entity.type}-${entity.id}`;

export const rebuildBackoffMs = (attemptsMade: number) => Math.min(BACKOFF_MAX_MS, BACKOFF_FIRST_MS * 2 ** Math.max(0, attemptsMade - 1));

/** The producing side: any process that notices counters needing a rebuild. */
export function createRebuildRequests(connection: ConnectionOptions, keys: Keys, logger: Logger) {
  const queue = new Queue<RebuildJobData>(REBUILD_QUEUE, { connection, prefix: keys.bullPrefix() });
  queue.on('error', (error) => logger.warn({ err: error }, 'rebuild queue error'));
  const recent = new LRUCache<string, true>({ max: 10_000, ttl: REQUEST_THROTTLE_MS });

  return {
    /** Asks for a rebuild; never throws (a read must not fail because the queue did). */
    request(entity: EntityRef): void {
      const id = rebuildJobId(entity);
      if (recent.has(id)) return;
      recent.set(id, true);
      queue
        .add('rebuild', entity, {
          jobId: id,
          attempts: MAX_ATTEMPTS,
          backoff: { type: 'tally' },
          removeOnComplete: true,
          removeOnFail: 1000,
        })
        .catch((error: unknown) => logger.warn({ err: error, entity: id }, 'could not queue a rebuild'));
    },
    close: () => queue.close(),
  };
}

/** BullMQ worker settings every rebuild worker must share (stall detection, backoff). */
export const rebuildWorkerSettings = (lockMs: number) => ({
  lockDuration: lockMs,
  stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
  settings: { backoffStrategy: rebuildBackoffMs },
});

export interface RebuildWorkerOptions {
  connection: ConnectionOptions;
  keys: Keys;
  rebuilder: Rebuilder;
  logger: Logger;
  /** BullMQ job lock: a dead worker's job is retried after this long. */
  lockMs: number;
  metrics: Metrics;
  /** User counters are rebuilt from PostgreSQL (jobs for entity type `user`). */
  rebuildUser: (userId: number) => Promise<unknown>;
}

export function createRebuildWorker(options: RebuildWorkerOptions) {
  const { rebuilder, logger } = options;
  const worker = new Worker<RebuildJobData>(
    REBUILD_QUEUE,
    async (job, token) => {
      const entity = job.data;
      const acquired = await rebuilder.acquire(entity);
      if (acquired.status !== 'acquired') {
        options.metrics.rebuilds.inc({ via: 'job', outcome: acquired.status });
        // Not a failure: come back when the lock or the rate-limit window frees up.
        await job.moveToDelayed(Date.now() + acquired.retryInMs, token);
        throw new DelayedError();
      }
      try {
        const result = entity.type === USER ? await options.rebuildUser(entity.id) : await rebuilder.rebuild(entity);
        options.metrics.rebuilds.inc({ via: 'job', outcome: 'done' });
        logger.info({ entity: rebuildJobId(entity), result }, 'rebuilt counters');
        return result;
      } finally {
        await rebuilder.release(entity, acquired.token);
      }
    },
    {
      connection: options.connection,
      prefix: options.keys.bullPrefix(),
      autorun: false,
      concurrency: 4,
      ...rebuildWorkerSettings(options.lockMs),
    },
  );
  worker.on('failed', (job, error) => logger.error({ err: error, job: job?.id }, 'rebuild job failed'));
  worker.on('error', (error) => logger.error({ err: error }, 'rebuild worker error'));

  return {
    worker,
    start() {
      void worker.run();
    },
    stop: () => worker.close(),
  };
}
