// Wires one Tally process: stores, GraphQL, HTTP, (later) workers. `start`/`stop` are the
// only lifecycle; `stop` undoes `start` in reverse order.
import type { AddressInfo } from 'node:net';
import { createAuth } from './auth/jwt.js';
import type { Config } from './config.js';
import { createDb, type DbOptions } from './db/client.js';
import { createPostStore } from './db/posts.js';
import { createUserStore } from './db/users.js';
import { createApollo } from './graphql/apollo.js';
import { createContextFactory } from './graphql/context.js';
import { createCursorCodec } from './graphql/cursor.js';
import type { Services } from './graphql/services.js';
import { createHttpServer } from './http/server.js';
import { createLogger } from './log.js';
import { createRedis } from './redis/client.js';

export interface AppOptions {
  db?: DbOptions;
}

export function createApp(config: Config, options: AppOptions = {}) {
  const logger = createLogger(config);
  const db = createDb(config.databaseUrl, options.db);
  const redis = createRedis(config.redisUrl, logger);
  const services: Services = {
    auth: createAuth(config.jwtSecret),
    users: createUserStore(db),
    posts: createPostStore(db),
    cursors: createCursorCodec(config.cursorSecret),
  };
  const apollo = createApollo(config, logger);
  const readiness = async () => {
    await Promise.all([redis.ping(), db.$queryRaw`SELECT 1`]);
  };
  const http = createHttpServer({ apollo, context: createContextFactory(services), readiness, logger });
  let url: string | null = null;

  return {
    config,
    logger,
    db,
    redis,
    services,

    async start(): Promise<{ url: string }> {
      await apollo.start();
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(config.port, config.host, () => resolve());
      });
      const { port } = http.address() as AddressInfo;
      url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
      logger.info({ url: `${url}/graphql`, role: config.role }, 'tally is listening');
      return { url };
    },

    async stop(): Promise<void> {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
      });
      await apollo.stop();
      redis.disconnect();
      await db.$disconnect();
    },

    get url() {
      return url;
    },
  };
}

export type App = ReturnType<typeof createApp>;
