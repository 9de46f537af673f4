// A split deployment as separate processes, owned by the suite: its own redis-server (or Redis
// Cluster), its own PostgreSQL database, one ROLE=api and two ROLE=worker processes (and, for
// EVENT_LOG=kafka, a topic and groups of its own on the run's broker), reaching Redis or
// PostgreSQL through a TCP proxy of the suite's when a fault needs to stall their connections.
// `stop` leaves nothing behind.

import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { createAuth } from '../../src/auth/jwt.js';
import { migrate } from '../../src/db/migrate.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { databaseUrl, dropDatabase } from '../support/env.js';
import type { TestKafka } from '../support/kafka.js';
import { type RedisCluster, startRedisCluster } from '../support/redisCluster.js';
import { freePort } from '../support/redisServer.js';
import { startTcpProxy, type TcpProxy } from '../support/tcpProxy.js';
import { onCleanup } from './cleanup.js';
import { chaosKafkaEnv } from './kafka.js';
import { type OwnedRedis, startOwnedRedis } from './redisProcess.js';
import { createTallyProcess, type TallyProcess } from './tallyProcess.js';

export type EventLogMode = 'redis' | 'kafka';

export const JWT_SECRET = 'chaos-suite-secret-0123456789abcdef0123456789';
export const KEY_PREFIX = 'chaos:';
export const PARTITIONS = 16;

/** The checks' pool names itself, so a fault ending the service's PostgreSQL sessions can spare it. */
export const CHECKS_APPLICATION_NAME = 'tally-chaos-checks';

export interface Deployment {
  eventLog: EventLogMode;
  /** The single redis-server (null on a Cluster). */
  redis: OwnedRedis | null;
  /** The Redis Cluster (3 masters, a replica each) when `redis: 'cluster'`. */
  cluster: RedisCluster | null;
  /** The proxies the processes reach Redis and PostgreSQL through (`redisVia` / `pgVia: 'proxy'`); the suite's own connections go direct. */
  proxies: { redis: TcpProxy | null; pg: TcpProxy | null };
  database: { name: string; url: string };
  /** A small pool for the checks (direct, never through a proxy). */
  pg: pg.Pool;
  keys: Keys;
  api: TallyProcess;
  workers: TallyProcess[];
  /** The Kafka settings the processes run with (topic, group prefix), when EVENT_LOG=kafka. */
  kafka: { brokers: string[]; topic: string; groupPrefix: string } | null;
  sign(userId: number): Promise<string>;
  logDir: string;
  stop(): Promise<void>;
}

export interface DeploymentOptions {
  eventLog: EventLogMode;
  kafka: TestKafka | null;
  logDir: string;
  redisArgs?: string[];
  /** One redis-server (default), or a Redis Cluster of 3 masters with a replica each. */
  redis?: 'single' | 'cluster';
  /** The processes reach the single Redis / PostgreSQL directly (default) or through a proxy of the suite's. */
  redisVia?: 'direct' | 'proxy';
  pgVia?: 'direct' | 'proxy';
  /** Settings of the row's own, on top of the deployment's (e.g. shorter timeouts). */
  env?: Record<string, string>;
}

/** A proxy to `target`, closed (its connections dropped) at cleanup. */
async function proxyTo(target: { host: string; port: number }, what: string): Promise<{ proxy: TcpProxy; close: () => Promise<void> }> {
  const proxy = await startTcpProxy(target);
  return { proxy, close: onCleanup(`proxy :${proxy.port} to ${what}`, () => proxy.cut()) };
}

export async function startDeployment(options: DeploymentOptions): Promise<Deployment> {
  mkdirSync(options.logDir, { recursive: true });
  const onCluster = options.redis === 'cluster';
  const redis = onCluster
    ? null
    : await startOwnedRedis({ extraArgs: options.redisArgs ?? [], logFile: join(options.logDir, 'redis.log') });
  const cluster = onCluster ? await startRedisCluster({ replicas: 1, logDir: options.logDir }) : null;
  const stopCluster = cluster ? onCleanup(`redis cluster ${cluster.nodes.join(',')}`, () => cluster.stop()) : async () => {};
  const name = `tally_chaos_${randomBytes(5).toString('hex')}`;
  const url = databaseUrl(name);
  const dropDb = onCleanup(`database ${name}`, () => dropDatabase(name));
  const pool = new pg.Pool({ connectionString: url, max: 3, application_name: CHECKS_APPLICATION_NAME });
  pool.on('error', () => {});
  const closePool = onCleanup(`pool of ${name}`, () => pool.end());
  const redisProxy = options.redisVia === 'proxy' && redis ? await proxyTo({ host: '127.0.0.1', port: redis.port }, 'redis') : null;
  const processUrl = new URL(url);
  const pgProxy =
    options.pgVia === 'proxy' ? await proxyTo({ host: processUrl.hostname, port: Number(processUrl.port || 5432) }, 'postgresql') : null;
  if (pgProxy) processUrl.host = `127.0.0.1:${pgProxy.proxy.port}`;

  const kafkaSettings = options.eventLog === 'kafka' ? chaosKafkaEnv(options.kafka!) : {};
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    DATABASE_URL: processUrl.toString(),
    ...(cluster
      ? { REDIS_CLUSTER_NODES: cluster.nodes.join(',') }
      : { REDIS_URL: redisProxy ? `redis://127.0.0.1:${redisProxy.proxy.port}` : redis!.url }),
    REDIS_KEY_PREFIX: KEY_PREFIX,
    JWT_SECRET,
    LOG_LEVEL: 'warn',
    EVENT_LOG: options.eventLog,
    RATE_LIMIT_CHANGES: '1000000',
    RATE_LIMIT_WRITES: '1000000',
    RATE_LIMIT_LIST_PAGES: '1000000',
    ...kafkaSettings,
    ...options.env,
  };
  const [apiPort, ...workerPorts] = await Promise.all([freePort(), freePort(), freePort()]);
  const api = createTallyProcess({ name: 'api', port: apiPort!, env: { ...env, ROLE: 'api' }, logFile: join(options.logDir, 'api.log') });
  const workers = workerPorts.map((port, i) =>
    createTallyProcess({
      name: `worker-${i + 1}`,
      port,
      // MEMBER_ID: a stable identity, so a restarted worker reclaims its partitions at once.
      env: { ...env, ROLE: 'worker', MEMBER_ID: `worker-${i + 1}` },
      logFile: join(options.logDir, `worker-${i + 1}.log`),
    }),
  );
  const processes = [api, ...workers];
  const auth = createAuth(JWT_SECRET);

  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop(5000).catch(() => {})));
    await Promise.all(processes.map((p) => p.dispose()));
    await closePool();
    await redisProxy?.close();
    await pgProxy?.close();
    await redis?.stop();
    await stopCluster();
    await dropDb();
  };
  try {
    await migrate(url);
    // The API first: it records the deployment in Redis before the workers start.
    await api.start();
    await Promise.all(workers.map((w) => w.start()));
  } catch (error) {
    await stop();
    throw error;
  }

  return {
    eventLog: options.eventLog,
    redis,
    cluster,
    proxies: { redis: redisProxy?.proxy ?? null, pg: pgProxy?.proxy ?? null },
    database: { name, url },
    pg: pool,
    keys: createKeys(KEY_PREFIX, PARTITIONS),
    api,
    workers,
    kafka:
      options.eventLog === 'kafka'
        ? {
            brokers: kafkaSettings.KAFKA_BROKERS!.split(','),
            topic: kafkaSettings.KAFKA_TOPIC!,
            groupPrefix: kafkaSettings.KAFKA_GROUP_PREFIX!,
          }
        : null,
    sign: (userId) => auth.sign(userId),
    logDir: options.logDir,
    stop,
  };
}
