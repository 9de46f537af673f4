// Wires one Tally process: GraphQL over HTTP and (by ROLE) the background workers (event
// consumers, flush jobs, recovery). `stop` undoes `start` in reverse order.

import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from './config.js';
import type { DbOptions } from './db/client.js';
import { createApollo } from './graphql/apollo.js';
import { createContextFactory } from './graphql/context.js';
import { createDocumentCaches } from './graphql/documentCache.js';
import { createDocumentLimits } from './graphql/limits.js';
import { createPersistedQueryStore } from './graphql/persistedQueries.js';
import { createSchema } from './graphql/schema.js';
import { createMetricsServer } from './http/metricsEndpoint.js';
import { createHttpServer } from './http/server.js';
import { attachWebSocket } from './http/websocket.js';
import { createCountsFeed } from './live/countsFeed.js';
import { createLiveCounts } from './live/liveCounts.js';
import { createSocketLeases } from './live/socketLeases.js';
import { createMetrics } from './metrics.js';
import { createApi } from './process/api.js';
import { openParts } from './process/parts.js';
import { createRedis } from './redis/client.js';
import { trackRoundTrips } from './redis/roundTrips.js';
import { createWorkers } from './workers.js';

export interface AppOptions {
  db?: DbOptions;
}

export function createApp(config: Config, options: AppOptions = {}) {
  const parts = openParts(config, { name: 'tally', db: options.db });
  const { logger, db, keys, redis, eventLogs } = parts;
  const redisRoundTrips = trackRoundTrips(redis);
  // API processes only: live counts arrive on one subscriber connection (SSUBSCRIBE, per
  // partition as watched), deletions and erasures on another (SUBSCRIBE, for good).
  const subscriber =
    config.role !== 'worker' ? createRedis(config, logger, { connectionName: 'tally-live', forSubscriptions: true }) : null;
  const announcementsSubscriber = config.role !== 'worker' ? createRedis(config, logger, { connectionName: 'tally-announcements' }) : null;
  const api = createApi(parts, {
    onRateLimited: (budget) => metrics.rateLimited.inc({ budget }),
    subscriber: announcementsSubscriber,
  });
  const { deps } = api;
  const runsApi = config.role !== 'worker';
  const runsWorkers = config.role !== 'api';

  const metrics = createMetrics({
    lag: () => eventLogs.lag(),
    redisRoundTrips: () => redisRoundTrips.count,
    viewBacklog: () =>
      Promise.all(
        Array.from({ length: keys.partitions }, async (_, partition) => ({
          partition,
          buffered: await redis.llen(keys.viewBuffer(partition)),
          unpersisted: await redis.scard(keys.viewsPending(partition)),
        })),
      ),
    documentCacheBytes: runsApi ? () => documentCaches.bytes() : undefined,
    announcementsListening: runsApi ? () => deps.announcements.listening() : undefined,
  });
  // Workers also notice a Redis that lost its data and recover it; the API restores what it touches.
  const workers = runsWorkers ? createWorkers(openParts(config, { name: 'tally-worker', logger }), metrics) : null;

  const schema = createSchema({ mode: config.schemaMode, production: config.nodeEnv === 'production' });
  const limits = createDocumentLimits(schema, config.limits);
  const documentCaches = createDocumentCaches(schema, config);
  const apollo = createApollo(
    config,
    logger,
    schema,
    documentCaches,
    createPersistedQueryStore(redis, keys, config.persistedQueries),
    limits,
  );
  let draining = false;
  const readiness = async () => {
    // An API process that cannot hear deletions and erasures must not take traffic.
    if (runsApi && !deps.announcements.listening()) throw new Error('not hearing announcements (deletions, erasures)');
    await Promise.all([redis.ping(), db.$queryRaw`SELECT 1`]);
  };
  const http = createHttpServer({
    apollo: runsApi ? apollo : null,
    graphiql: config.graphiql,
    context: createContextFactory(deps),
    readiness,
    readinessTimeoutMs: config.readinessTimeoutMs,
    isDraining: () => draining,
    metrics,
    metricsPath: config.metricsEndpoint.port === null ? config.metricsEndpoint.path : null,
    limits: config.limits,
    documentLimits: limits,
    connections: config.http,
    trustProxyHops: config.trustProxyHops,
    logger,
  });
  // Live counts: this replica listens to the partitions its own sockets watch.
  const websocket = subscriber
    ? attachWebSocket(http, {
        schema,
        api: deps,
        live: createLiveCounts({
          feed: createCountsFeed(subscriber, logger),
          keys,
          postCache: deps.postCache,
          entityCache: deps.entityCache,
          users: deps.users,
          visibility: deps.visibility,
          stallMs: config.websocket.stallMs,
          logger,
          hooks: {
            onPush: (lagMs) => {
              metrics.livePushes.inc();
              metrics.liveFanOutLag.observe(Math.max(0, lagMs) / 1000);
            },
            onDropped: () => metrics.livePushesDropped.inc(),
            onSubscriptions: (open) => metrics.liveSubscriptions.set(open),
          },
        }),
        sockets: createSocketLeases({ redis, keys, processId: config.memberId, logger }),
        settings: config.websocket,
        documentLimits: limits,
        production: config.nodeEnv === 'production',
        trustProxyHops: config.trustProxyHops,
        metrics,
        logger,
      })
    : null;
  const metricsServer = config.metricsEndpoint.port === null ? null : createMetricsServer(metrics, config.metricsEndpoint.path);
  let url: string | null = null;
  let metricsUrl: string | null = null;

  return {
    config,
    logger,
    db,
    keys,
    redis,
    redisRoundTrips,
    deps,
    metrics,
    websocket,
    workers,

    async start(): Promise<{ url: string }> {
      const deployment = await parts.checkDeployment();
      if (deployment.notReady.length > 0) {
        logger.error(
          { partitions: deployment.notReady },
          'Redis has lost its data: it is being recovered from PostgreSQL, which answers meanwhile',
        );
      }
      if (runsApi) {
        await api.start();
        await apollo.start();
      }
      await workers?.start();
      await listen(http, config.port, config.host);
      const { port } = http.address() as AddressInfo;
      url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
      metricsUrl = `${url}${config.metricsEndpoint.path}`;
      if (metricsServer) {
        const { host, port: metricsPort, path } = config.metricsEndpoint;
        await listen(metricsServer, metricsPort!, host);
        metricsUrl = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${(metricsServer.address() as AddressInfo).port}${path}`;
      }
      logger.info({ url: `${url}/graphql`, metrics: metricsUrl, role: config.role, partitions: config.partitions }, 'tally is listening');
      return { url };
    },

    async stop(): Promise<void> {
      const step = async (name: string, work: () => Promise<unknown> | unknown) => {
        logger.debug({ step: name }, 'stopping');
        await work();
      };
      draining = true; // /readyz says so while in-flight requests finish
      if (config.shutdownDelayMs > 0) await step('drain delay', () => new Promise((r) => setTimeout(r, config.shutdownDelayMs)));
      // Sockets first: the HTTP server's close waits for every connection, upgraded ones too.
      await step('websocket', () => websocket?.close());
      await step(
        'http',
        () =>
          new Promise<void>((resolve) => {
            http.close(() => resolve());
            http.closeIdleConnections();
          }),
      );
      await step('metrics', () => new Promise((resolve) => (metricsServer?.listening ? metricsServer.close(resolve) : resolve(undefined))));
      if (runsApi) await step('graphql', () => apollo.stop());
      await step('workers', () => workers?.stop());
      await step('announcements', () => api.stop());
      await step('connections', async () => {
        announcementsSubscriber?.disconnect();
        await parts.close();
      });
      logger.info('stopped');
    },

    get url() {
      return url;
    },

    /** Where Prometheus reads the metrics, once started. */
    get metricsUrl() {
      return metricsUrl;
    },
  };
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
}

export type App = ReturnType<typeof createApp>;
