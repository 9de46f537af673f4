// Wires one Tally process: stores, GraphQL over HTTP, and (by ROLE) the background workers
// (event aggregator, flush jobs). `stop` undoes `start` in reverse order.

import type { AddressInfo } from 'node:net';
import { createAuth } from './auth/jwt.js';
import type { Config } from './config.js';
import { createPostCounters } from './counters/postCounters.js';
import { createUserCounters } from './counters/userCounters.js';
import { createDb, type DbOptions } from './db/client.js';
import { createFeedCache } from './db/feedCache.js';
import { createPostCache } from './db/postCache.js';
import { createPostStore } from './db/posts.js';
import { createRelationLists } from './db/relationLists.js';
import { createUserCounterStore } from './db/userCounters.js';
import { createUserStore } from './db/users.js';
import { POST } from './domain/entities.js';
import { createEventLogs } from './events/eventLog.js';
import { createApollo } from './graphql/apollo.js';
import { createContextFactory } from './graphql/context.js';
import { createCursorCodec } from './graphql/cursor.js';
import { createPersistedQueryStore } from './graphql/persistedQueries.js';
import type { Services } from './graphql/services.js';
import { createHttpServer } from './http/server.js';
import { createRebuildRequests } from './jobs/rebuildJobs.js';
import { createRateLimiter } from './limits/rateLimiter.js';
import { createLogger } from './log.js';
import { createMetrics } from './metrics.js';
import { checkDeployment } from './recovery/deployment.js';
import { createDurableReads } from './recovery/durableReads.js';
import { createRecoveryServices } from './recovery/recoveryServices.js';
import { createRedis } from './redis/client.js';
import { createKeys } from './redis/keys.js';
import { withScripts } from './redis/luaScripts.js';
import { trackRoundTrips } from './redis/roundTrips.js';
import { createRelationStore } from './relations/relationStore.js';
import { createWorkers } from './workers.js';

export interface AppOptions {
  db?: DbOptions;
}

export function createApp(config: Config, options: AppOptions = {}) {
  const logger = createLogger(config);
  const db = createDb(config.databaseUrl, options.db);
  const keys = createKeys(config.redisKeyPrefix, config.partitions);
  const redis = withScripts(createRedis(config, logger));
  const redisRoundTrips = trackRoundTrips(redis);
  const posts = createPostStore(db);
  // The event log as seen from this process, for its lag metric (workers consume their own).
  const eventLogs = createEventLogs(config, redis, keys, logger);
  const recoveryParts = createRecoveryServices({ redis, keys, db, logger, eventLogs, rebuildLockMs: config.rebuildLockMs });
  const { facts, hasDurableState } = recoveryParts;
  // BullMQ producers (rebuild requests from the read path); blocking-safe connection.
  const jobsRedis = createRedis(config, logger, { connectionName: 'tally-jobs', forJobs: true });
  const rebuildRequests = createRebuildRequests(jobsRedis, keys, logger);
  const services: Services = {
    auth: createAuth(config.jwtSecret),
    users: createUserStore(db),
    posts,
    postCache: createPostCache(posts, config.postCacheTtlMs),
    feedCache: createFeedCache(posts, config.feedCacheTtlMs),
    userCounters: createUserCounters({ redis, keys, store: createUserCounterStore(db) }),
    postCounters: createPostCounters({ redis, keys, onMissing: (id) => rebuildRequests.request({ type: POST, id }) }),
    relations: createRelationStore(redis, keys, { restore: (entity) => recoveryParts.restorer.restore(entity) }),
    rateLimiter: createRateLimiter({
      redis,
      keys,
      budgets: config.rateLimits,
      onRejected: (budget) => metrics.rateLimited.inc({ budget }),
    }),
    lists: createRelationLists(db),
    cursors: createCursorCodec(config.cursorSecret),
    durableReads: createDurableReads(facts),
  };
  const runsApi = config.role !== 'worker';
  const runsWorkers = config.role !== 'api';

  const metrics = createMetrics({ lag: () => eventLogs.lag(), redisRoundTrips: () => redisRoundTrips.count });
  // Workers also notice a Redis that lost its data and recover it; the API restores what it touches.
  const workers = runsWorkers ? createWorkers(config, keys, logger, metrics) : null;

  const apollo = createApollo(config, logger, createPersistedQueryStore(redis, keys, config.persistedQueries));
  let draining = false;
  const readiness = async () => {
    await Promise.all([redis.ping(), db.$queryRaw`SELECT 1`]);
  };
  const http = createHttpServer({
    apollo: runsApi ? apollo : null,
    graphiql: config.graphiql,
    context: createContextFactory(services),
    readiness,
    isDraining: () => draining,
    metrics,
    limits: config.limits,
    connections: config.http,
    trustProxyHops: config.trustProxyHops,
    logger,
  });
  let url: string | null = null;

  return {
    config,
    logger,
    db,
    keys,
    redis,
    redisRoundTrips,
    services,
    metrics,
    workers,

    async start(): Promise<{ url: string }> {
      const deployment = await checkDeployment(redis, keys, hasDurableState);
      if (deployment.notReady.length > 0) {
        logger.error(
          { partitions: deployment.notReady },
          'Redis has lost its data: it is being recovered from PostgreSQL, which answers meanwhile',
        );
      }
      if (runsApi) await apollo.start();
      await workers?.start();
      await new Promise<void>((resolve, reject) => {
        http.once('error', reject);
        http.listen(config.port, config.host, () => resolve());
      });
      const { port } = http.address() as AddressInfo;
      url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
      logger.info({ url: `${url}/graphql`, role: config.role, partitions: config.partitions }, 'tally is listening');
      return { url };
    },

    async stop(): Promise<void> {
      const step = async (name: string, work: () => Promise<unknown> | unknown) => {
        logger.debug({ step: name }, 'stopping');
        await work();
      };
      draining = true; // /readyz says so while in-flight requests finish
      if (config.shutdownDelayMs > 0) await step('drain delay', () => new Promise((r) => setTimeout(r, config.shutdownDelayMs)));
      await step(
        'http',
        () =>
          new Promise<void>((resolve) => {
            http.close(() => resolve());
            http.closeIdleConnections();
          }),
      );
      if (runsApi) await step('graphql', () => apollo.stop());
      await step('workers', () => workers?.stop());
      await step('rebuild requests', () => rebuildRequests.close());
      await step('event log', () => eventLogs.close());
      await step('connections', async () => {
        jobsRedis.disconnect();
        redis.disconnect();
        await db.$disconnect();
      });
      logger.info('stopped');
    },

    get url() {
      return url;
    },
  };
}

export type App = ReturnType<typeof createApp>;
