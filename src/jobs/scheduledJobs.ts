// Recurring work on BullMQ: a queue whose job schedulers (`upsertJobScheduler`, every N ms)
// are the only producers, and the worker that runs them. `start` upserts the schedulers and
// removes ones no longer wanted (or wanted at another interval); `ensure` recreates any that
// went missing (Redis lost its data).
import { type ConnectionOptions, Queue, Worker } from 'bullmq';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';

export interface Schedule<T> {
  id: string;
  everyMs: number;
  data: T;
}

export interface ScheduledJobsOptions<T> {
  queue: string;
  connection: ConnectionOptions;
  keys: Keys;
  logger: Logger;
  schedules: Schedule<T>[];
  /** Runs one job; `shouldStop` turns true when the process is shutting down. */
  run(data: T, shouldStop: () => boolean): Promise<unknown>;
}

export function createScheduledJobs<T>(options: ScheduledJobsOptions<T>) {
  const { connection, logger } = options;
  const prefix = options.keys.bullPrefix();
  let closing = false;
  let running = false;

  // Untyped: a generic T would defer BullMQ's conditional name types; only schedulers add jobs.
  const queue = new Queue(options.queue, { connection, prefix });
  queue.on('error', (error) => logger.warn({ err: error, queue: options.queue }, 'queue error'));
  const worker = new Worker<T>(options.queue, (job) => options.run(job.data, () => closing), {
    connection,
    prefix,
    concurrency: Math.max(1, options.schedules.length),
    autorun: false,
  });
  worker.on('failed', (job, error) => logger.error({ err: error, queue: options.queue, job: job?.id }, 'job failed'));
  worker.on('error', (error) => logger.error({ err: error, queue: options.queue }, 'worker error'));

  const upsert = (schedule: Schedule<T>) =>
    queue.upsertJobScheduler(
      schedule.id,
      { every: schedule.everyMs },
      { name: schedule.id, data: schedule.data, opts: { removeOnComplete: true, removeOnFail: 100 } },
    );

  return {
    async start() {
      const wanted = new Map(options.schedules.map((s) => [s.id, s.everyMs]));
      for (const scheduler of await queue.getJobSchedulers()) {
        // One whose interval changed starts afresh: BullMQ keeps its offset (up to the old
        // interval), and a run that starts late then puts the next one that far ahead.
        if (wanted.get(scheduler.key) !== scheduler.every) await queue.removeJobScheduler(scheduler.key);
      }
      for (const schedule of options.schedules) await upsert(schedule);
      if (!running) {
        running = true;
        void worker.run();
      }
    },

    /** Recreates schedulers that are missing (Redis lost its data): cheap enough to call every second. */
    async ensure() {
      for (const schedule of options.schedules) {
        if (await queue.getJobScheduler(schedule.id)) continue;
        logger.warn({ queue: options.queue, scheduler: schedule.id }, 'job scheduler missing; creating it again');
        await upsert(schedule);
      }
    },

    /** Lets the running jobs finish (they see `shouldStop`), then closes. */
    async stop() {
      closing = true;
      await worker.close();
      await queue.close();
    },
  };
}
