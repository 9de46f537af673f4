// Notices, while running, that Redis lost its data (FLUSHALL, failover to an empty replica):
// the deployment record is gone. Then it records the deployment again, which turns recovery
// mode on when PostgreSQL holds facts, and lets the process re-create what it keeps in Redis
// (job schedulers; consumer groups re-create themselves).
import type { Redis, Cluster } from 'ioredis';
import { createStopSignal } from '../events/stopSignal.js';
import type { Logger } from '../log.js';
import { checkDeployment } from '../redis/deployment.js';
import type { Keys } from '../redis/keys.js';

export interface RedisLossWatchOptions {
  redis: Redis | Cluster;
  keys: Keys;
  logger: Logger;
  hasDurableFacts: () => Promise<boolean>;
  onLoss?: () => Promise<void>;
  intervalMs?: number;
}

export function createRedisLossWatch(options: RedisLossWatchOptions) {
  const { redis, keys, logger } = options;
  const signal = createStopSignal();
  let loop: Promise<void> | null = null;

  async function check() {
    if ((await redis.exists(keys.meta())) === 1) return;
    const state = await checkDeployment(redis, keys, options.hasDurableFacts);
    logger.error(
      { recovering: state.recovering },
      state.recovering
        ? 'Redis has lost its data: reads come from PostgreSQL until `npm run recover` completes'
        : 'Redis has lost its data (no durable facts to recover)',
    );
    await options.onLoss?.();
  }

  return {
    start() {
      loop = (async () => {
        while (!signal.stopped) {
          await check().catch((error: unknown) => logger.warn({ err: error }, 'Redis loss check failed'));
          await signal.sleep(options.intervalMs ?? 5000);
        }
      })();
    },
    async stop() {
      signal.stop();
      await loop;
    },
  };
}
