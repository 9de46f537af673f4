// Redis connections: one server (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES), behind
// one function so every process and CLI connects the same way. Auto-pipelining sends every
// command issued in the same event-loop tick as one write per node, which is what makes a
// feed page's loaders cost one round trip (on a Cluster: one parallel write to each node).
import { Cluster, type RedisOptions as IoRedisOptions, Redis } from 'ioredis';
import type { Logger } from 'pino';
import { REDIS_DEFAULT_TIMEOUTS, type RedisTimeouts } from '../config.js';

export interface RedisOptions {
  connectionName?: string;
  /** For BullMQ: its blocking commands must wait out reconnects instead of failing. */
  forJobs?: boolean;
  /** For SSUBSCRIBE (live counts): on a Cluster, one subscriber connection per master. */
  forSubscriptions?: boolean;
}

/** Where Redis is: the Cluster's seed nodes (host:port) when any are given, else the URL. */
export interface RedisTarget {
  redisUrl: string;
  redisClusterNodes?: readonly string[];
  /** Deadlines and keep-alive of every connection (defaults: REDIS_DEFAULT_TIMEOUTS). */
  redisTimeouts?: RedisTimeouts;
}

/** BullMQ blocks a connection for up to 10 s waiting for a job (its cap for BZPOPMIN). */
const JOBS_LONGEST_BLOCK_MS = 10_000;

export type RedisClient = Redis | Cluster;

export const isCluster = (client: RedisClient): client is Cluster => (client as Cluster).isCluster === true;

/** Seed nodes as ioredis takes them; `[::1]:7000` style IPv6 hosts lose their brackets. */
export function seedNodes(nodes: readonly string[]) {
  return nodes.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at).replace(/^\[(.*)\]$/, '$1'), port: Number(node.slice(at + 1)) };
  });
}

export function createRedis(target: string | RedisTarget, logger: Logger, options: RedisOptions = {}): RedisClient {
  const {
    redisUrl,
    redisClusterNodes = [],
    redisTimeouts = REDIS_DEFAULT_TIMEOUTS,
  } = typeof target === 'string' ? { redisUrl: target } : target;
  const connectionName = options.connectionName ?? 'tally';
  const { commandTimeoutMs, keepAliveMs } = redisTimeouts;
  const perConnection: IoRedisOptions = {
    connectionName,
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error, not hang, while Redis is away.
    maxRetriesPerRequest: options.forJobs ? null : 3,
    // A connection that stops answering (half-open: a proxy or a network that drops packets
    // without closing anything) is destroyed once a command waits this long for any data,
    // and ioredis connects anew. BullMQ's blocking waits are longer than a command's.
    socketTimeout: options.forJobs ? commandTimeoutMs + JOBS_LONGEST_BLOCK_MS : commandTimeoutMs,
    keepAlive: keepAliveMs,
    ...(options.forJobs
      ? {}
      : {
          // The caller hears of a slow command in time (BullMQ's blocking commands must wait).
          commandTimeout: commandTimeoutMs,
          // A command sent on a connection that died is failed, never sent again on the next:
          // its caller already gave up and answered (writes also carry a deadline, lua/setRelation-6.lua).
          autoResendUnfulfilledCommands: false,
        }),
  };
  const redis: RedisClient =
    redisClusterNodes.length > 0
      ? new Cluster(seedNodes(redisClusterNodes), {
          enableAutoPipelining: !options.forJobs,
          lazyConnect: options.forJobs,
          // Replicas may lag: counts, viewer state and scripts must see the master's writes.
          scaleReads: 'master',
          shardedSubscribers: options.forSubscriptions ?? false,
          redisOptions: perConnection,
        })
      : new Redis(redisUrl, { ...perConnection, enableAutoPipelining: !options.forJobs, lazyConnect: options.forJobs });
  // ioredis reconnects by itself; without a listener each failed attempt is an unhandled event.
  let lastLogged = 0;
  redis.on('error', (error: Error) => {
    if (Date.now() - lastLogged < 10_000) return;
    lastLogged = Date.now();
    logger.warn({ err: error, connection: connectionName }, 'redis connection error');
  });
  return redis;
}
