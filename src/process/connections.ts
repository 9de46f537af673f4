// What every Tally process opens (src/process/parts.ts builds the rest on it): logs, key
// names, a PostgreSQL pool, a Redis connection with the scripts loaded, a lazy one for
// BullMQ and the deployment's event logs. `close` undoes it.
import type { Config } from '../config.js';
import { createDb, type DbOptions } from '../db/client.js';
import { createEventLogs } from '../events/eventLog.js';
import { createLogger, type Logger } from '../log.js';
import { createRedis } from '../redis/client.js';
import { createKeys } from '../redis/keys.js';
import { withScripts } from '../redis/luaScripts.js';

export interface ConnectionOptions {
  /** Redis CLIENT SETNAME of the main connection (e.g. tally-worker), to tell processes apart. */
  name: string;
  /** Share a logger instead of creating one from the config. */
  logger?: Logger;
  db?: DbOptions;
}

export function openConnections(config: Config, options: ConnectionOptions) {
  const logger = options.logger ?? createLogger(config);
  const keys = createKeys(config.redisKeyPrefix, config.partitions);
  const db = createDb(config.databaseUrl, { timeouts: config.databaseTimeouts, ...options.db });
  const redis = withScripts(createRedis(config, logger, { connectionName: options.name }));
  // BullMQ blocks on its connection; it connects when a queue or worker first uses it.
  const jobsRedis = createRedis(config, logger, { connectionName: 'tally-jobs', forJobs: true });
  const eventLogs = createEventLogs(config, redis, keys, logger);

  return {
    config,
    logger,
    keys,
    db,
    redis,
    jobsRedis,
    eventLogs,

    async close(): Promise<void> {
      await eventLogs.close();
      jobsRedis.disconnect();
      redis.disconnect();
      await db.$disconnect();
    },
  };
}

export type Connections = ReturnType<typeof openConnections>;
