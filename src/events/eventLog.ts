// Builds the event log this deployment is configured for (the adapter behind the port).
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { createRedisStreamsLog } from './redisStreams.js';
import type { EventLog } from './types.js';

export function createEventLog(config: Config, redis: ScriptedRedis, keys: Keys, logger: Logger): EventLog {
  return createRedisStreamsLog({
    redis,
    keys,
    logger,
    batchSize: config.aggregatorBatchSize,
    leaseMs: config.consumerLeaseMs,
    retentionMs: config.eventRetentionMs,
  });
}
