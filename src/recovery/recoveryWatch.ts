// Recovers from a Redis that lost its data with nobody's help. Every worker process looks
// each `intervalMs`: when a partition is not ready (src/recovery/readiness.ts) it runs the
// recovery, and the one that takes its lock does the work; if that process dies, the next
// look by any other resumes from the saved progress. It also keeps this process's job
// schedulers in place: they live in Redis too, and nothing else would recreate them. Once the
// facts are whole, it builds the reaction index of reactions older than it, if any are left.
import { createStopSignal } from '../events/stopSignal.js';
import type { Logger } from '../log.js';
import type { ReactionIndexBuilder } from './reactionIndex.js';
import type { Readiness } from './readiness.js';
import type { Recovery } from './recover.js';

export interface RecoveryWatchOptions {
  readiness: Readiness;
  recovery: Recovery;
  reactionIndex: ReactionIndexBuilder;
  logger: Logger;
  /** Recreates whatever this process keeps in Redis that is missing (job schedulers). */
  ensureSchedules: () => Promise<void>;
  intervalMs?: number;
}

export function createRecoveryWatch(options: RecoveryWatchOptions) {
  const { logger } = options;
  const signal = createStopSignal();
  let loop: Promise<void> | null = null;
  let lossReported = false;

  async function look() {
    const notReady = await options.readiness.notReady();
    if (notReady.length > 0) {
      if (!lossReported) logger.error({ partitions: notReady }, 'Redis lost its data: recovering it from PostgreSQL');
      lossReported = true;
      const outcome = await options.recovery.run({ shouldStop: () => signal.stopped });
      if (outcome === 'recovered') lossReported = false;
    } else {
      lossReported = false;
    }
    await options.ensureSchedules();
    // After the schedulers: a build SCANs the whole keyspace, and flushes must not wait for it.
    if (notReady.length === 0 && !(await options.reactionIndex.isWhole())) await options.reactionIndex.build(() => signal.stopped);
  }

  return {
    start() {
      loop = (async () => {
        while (!signal.stopped) {
          await look().catch((error: unknown) => logger.warn({ err: error }, 'recovery watch failed; looking again'));
          await signal.sleep(options.intervalMs ?? 1000);
        }
      })();
    },
    async stop() {
      signal.stop();
      await loop;
    },
  };
}
