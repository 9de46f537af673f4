// The flush as BullMQ job schedulers: one scheduler per group of partitions fires every
// FLUSH_INTERVAL_MS; whichever worker takes the job folds those partitions.
import type { ConnectionOptions } from 'bullmq';
import type { Flusher } from '../counters/flush.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createScheduledJobs } from './scheduledJobs.js';

export const FLUSH_QUEUE = 'tally-flush';

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
  /** Runs after each completed flush job (metrics, the users' asOf). */
  onFlushed?: (result: { partitions: number[]; folded: number; rebuilt: number; ms: number }) => Promise<void> | void;
}

export function createFlushJobs(options: FlushJobsOptions) {
  const groups = partitionGroups(options.keys.partitions, options.partitionsPerJob);
  return createScheduledJobs<{ partitions: number[] }>({
    queue: FLUSH_QUEUE,
    connection: options.connection,
    keys: options.keys,
    logger: options.logger,
    schedules: groups.map((partitions, i) => ({ id: `flush:${i}`, everyMs: options.intervalMs, data: { partitions } })),
    async run({ partitions }, shouldStop) {
      const started = Date.now();
      // On shutdown, stop between fold calls: the pass resumes on the next run, nothing is lost.
      const result = await options.flusher.foldPartitions(partitions, { shouldStop });
      await options.onFlushed?.({ partitions, folded: result.folded, rebuilt: result.rebuilt, ms: Date.now() - started });
      return result;
    },
  });
}
