// Redis connections. Auto-pipelining sends every command issued in the same event-loop tick
// as one write, which is what makes a feed page's loaders cost one round trip.
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

export interface RedisOptions {
  connectionName?: string;
  /** For BullMQ: its blocking commands must wait out reconnects instead of failing. */
  forJobs?: boolean;
}

export function createRedis(url: string, logger: Logger, options: RedisOptions = {}): Redis {
  const redis = new Redis(url, {
    enableAutoPipelining: !options.forJobs,
    connectionName: options.connectionName ?? 'tally',
    // Fail a command after a few reconnect attempts instead of queueing it forever: a request
    // should get an error, not hang, while Redis is away.
    maxRetriesPerRequest: options.forJobs ? null : 3,
    lazyConnect: options.forJobs,
  });
  // ioredis reconnects by itself; without a listener each failed attempt is an unhandled event.
  let lastLogged = 0;
  redis.on('error', (error: Error) => {
    if (Date.now() - lastLogged < 10_000) return;
    lastLogged = Date.now();
    logger.warn({ err: error, connection: options.connectionName ?? 'tally' }, 'redis connection error');
  });
  return redis;
}
