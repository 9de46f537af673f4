// What every Tally process opens, built one way for the API, the workers, the CLIs and the
// seed: logs, key names, a PostgreSQL pool, a Redis connection with the scripts loaded, a
// lazy one for BullMQ, the deployment's event logs and its recovery side. `close` undoes it.
import type { Config } from '../config.js';
import { createDb, type DbOptions } from '../db/client.js';
import { createEventLogs } from '../events/eventLog.js';
import { createLogger, type Logger } from '../log.js';
import { checkDeployment } from '../recovery/deployment.js';
import { createRecoveryServices } from '../recovery/recoveryServices.js';
import { createRedis } from '../redis/client.js';
import { createKeys } from '../redis/keys.js';
import { withScripts } from '../redis/luaScripts.js';

export interface ConnectionOptions {
  /** Redis CLIENT SETNAME of the main connection (e.g. tally-worker), to tell processes apart. */
  name: string;
  /** Share a logger instead of creating one from the config. */
  logger?: Logger;
  db?: DbOptions;
  /** Entities a recovery walks per page (tests make it small). */
  recoveryPageSize?: number;
}

export function openConnections(config: Config, options: ConnectionOptions) {
  const logger = options.logger ?? createLogger(config);
  const keys = createKeys(config.redisKeyPrefix, config.partitions);
  const db = createDb(config.databaseUrl, { timeouts: config.databaseTimeouts, ...options.db });
  const redis = withScripts(createRedis(config, logger, { connectionName: options.name }));
  // BullMQ blocks on its connection; it connects when a queue or worker first uses it.
  const jobsRedis = createRedis(config, logger, { connectionName: 'tally-jobs', forJobs: true });
  const eventLogs = createEventLogs(config, redis, keys, logger);
  const recovery = createRecoveryServices({
    redis,
    keys,
    db,
    logger,
    eventLogs,
    rebuildLockMs: config.rebuildLockMs,
    pageSize: options.recoveryPageSize,
  });

  return {
    config,
    logger,
    keys,
    db,
    redis,
    jobsRedis,
    eventLogs,
    recovery,

    /** Checks the Redis against this deployment (partition count) and marks what it must recover. */
    checkDeployment: () => checkDeployment(redis, keys, recovery.hasDurableState),

    async close(): Promise<void> {
      await eventLogs.close();
      jobsRedis.disconnect();
      redis.disconnect();
      await db.$disconnect();
    },
  };
}

export type Connections = ReturnType<typeof openConnections>;
