// Erasure jobs on BullMQ: one job per erased user (its id derived from the user, so asking
// twice is one job). A run does batches for one turn (TURN_MS), paced to `busyPercent` of
// its time (src/jobs/pacer.ts), then hands the job back to the queue so several users take
// turns. A worker that dies mid-run leaves a stalled job BullMQ hands to another worker,
// which resumes from the progress the last batch saved.
import { type ConnectionOptions, DelayedError, Queue, Worker } from 'bullmq';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createPacer, type Pacer } from './pacer.js';

export const ERASURE_QUEUE = 'tally-erasure';

export const erasureJobId = (userId: number) => `erase-${userId}`;

/** One batch of a user's erasure (src/services/eraser.ts); it calls `pace` between its steps. */
export type RunErasureBatch = (userId: number, pace: Pacer['pace']) => Promise<{ finished: boolean; waiting: boolean }>;

/** How long one job run lasts before the job goes back in the queue behind other users'. */
const TURN_MS = 5000;
/** How long a job waits, out of the queue, when a batch must wait (for the fact persister). */
const WAIT_MS = 250;

export function createErasureRequests(connection: ConnectionOptions, keys: Keys) {
  const queue = new Queue<{ userId: number }>(ERASURE_QUEUE, { connection, prefix: keys.bullPrefix() });
  return {
    /** Queues the user's erasure (again, after a failure: it resumes where it stopped). */
    async request(userId: number): Promise<void> {
      const jobId = erasureJobId(userId);
      const existing = await queue.getJob(jobId);
      if (existing && (await existing.isFailed())) await existing.remove();
      await queue.add(
        'erase',
        { userId },
        { jobId, attempts: 20, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: true, removeOnFail: 100 },
      );
    },
    close: () => queue.close(),
  };
}

export function createErasureWorker(options: {
  connection: ConnectionOptions;
  keys: Keys;
  runBatch: RunErasureBatch;
  /** ERASURE_BUSY_PERCENT: the share of its time one user's erasure may be working. */
  busyPercent: number;
  lockMs: number;
  logger: Logger;
}) {
  const { logger } = options;
  const worker = new Worker<{ userId: number }>(
    ERASURE_QUEUE,
    async (job, token) => {
      const { pace } = createPacer(options.busyPercent);
      const until = Date.now() + TURN_MS;
      for (;;) {
        const outcome = await options.runBatch(job.data.userId, pace);
        if (outcome.finished) return 'erased';
        if (outcome.waiting || Date.now() >= until) {
          await job.moveToDelayed(Date.now() + (outcome.waiting ? WAIT_MS : 0), token);
          throw new DelayedError();
        }
        await pace();
      }
    },
    {
      connection: options.connection,
      prefix: options.keys.bullPrefix(),
      autorun: false,
      concurrency: 2,
      lockDuration: options.lockMs,
      stalledInterval: Math.max(500, Math.floor(options.lockMs / 2)),
    },
  );
  worker.on('failed', (job, error) => logger.error({ err: error, job: job?.id }, 'erasure job failed'));
  worker.on('error', (error) => logger.error({ err: error }, 'erasure worker error'));
  return {
    start() {
      void worker.run();
    },
    stop: () => worker.close(),
  };
}
