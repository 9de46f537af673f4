// The flush as BullMQ job schedulers: one scheduler per group of partitions fires every
// FLUSH_INTERVAL_MS; whichever worker takes the job folds those partitions. Schedulers are
// upserted on start, so a changed interval or grouping replaces the old ones.
import { Queue, Worker, type ConnectionOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Flusher } from '../counters/flush.js';
import type { Keys } from '../redis/keys.js';

export const FLUSH_QUEUE = 'tally-flush';

export interface FlushJobData {
  partitions: number[];
}

/** Partitions 0..P-1 cut into groups of `size`: one scheduler each. */
export function partitionGroups(partitions: number, size: number): number[][] {
  const groups: number[][] = [];
  for (let start = 0; start < partitions; start += size) {
    groups.push(Array.from({ length: Math.min(size, partitions - start) }, (_, i) => start + i));
  }
  return groups;
}

export interface FlushJobsOptions {
  connection: ConnectionOptions;
  keys: Keys;
  flusher: Flusher;
  intervalMs: number;
  partitionsPerJob: number;
  logger: Logger;
  /** Called after each completed flush job (metrics, tests). */
  onFlushed?: (result: { partitions: number[]; folded: number; rebuilt: number; ms: number }) => void;
}

export function createFlushJobs(options: FlushJobsOptions) {
  const { connection, keys, flusher, logger } = options;
  const prefix = keys.bullPrefix();
  const groups = partitionGroups(keys.partitions, options.partitionsPerJob);
  let closing = false;

  const queue = new Queue<FlushJobData>(FLUSH_QUEUE, { connection, prefix });
  queue.on('error', (error) => logger.warn({ err: error }, 'flush queue error'));
  const worker = new Worker<FlushJobData>(
    FLUSH_QUEUE,
    async (job) => {
      const started = Date.now();
      // Between fold calls on shutdown: the pass resumes on the next run, nothing is lost.
      const result = await flusher.foldPartitions(job.data.partitions, { shouldStop: () => closing });
      options.onFlushed?.({ partitions: job.data.partitions, folded: result.folded, rebuilt: result.rebuilt, ms: Date.now() - started });
      return result;
    },
    { connection, prefix, concurrency: Math.max(1, groups.length), autorun: false },
  );
  worker.on('failed', (job, error) => logger.error({ err: error, job: job?.id }, 'flush job failed'));
  worker.on('error', (error) => logger.error({ err: error }, 'flush worker error'));

  let running = false;

  return {
    /** Upserts the schedulers (again: safe to call more than once) and starts the worker. */
    async start() {
      const wanted = new Set(groups.map((_, i) => `flush:${i}`));
      for (const scheduler of await queue.getJobSchedulers()) {
        if (!wanted.has(scheduler.key)) await queue.removeJobScheduler(scheduler.key);
      }
      for (const [i, partitions] of groups.entries()) {
        await queue.upsertJobScheduler(
          `flush:${i}`,
          { every: options.intervalMs },
          { name: 'flush', data: { partitions }, opts: { removeOnComplete: true, removeOnFail: 100 } },
        );
      }
      if (!running) {
        running = true;
        void worker.run();
      }
    },

    async stop() {
      closing = true;
      await worker.close();
      await queue.close();
    },
  };
}
