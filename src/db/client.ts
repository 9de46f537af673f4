// One Prisma client per process, on the pg driver adapter (Prisma 7 needs no engine binary).
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { DATABASE_DEFAULT_TIMEOUTS, type DatabaseTimeouts } from '../config.js';
import { PrismaClient } from './generated/client.js';

export type Db = PrismaClient<'query'>;

export interface DbOptions {
  /** Called for every SQL statement Prisma sends; tests count round trips with it. */
  onQuery?: (sql: string) => void;
  poolSize?: number;
  timeouts?: DatabaseTimeouts;
}

/**
 * pg's client, except that a query that timed out on the wire takes its connection down: pg
 * stops waiting for the answer but leaves the connection waiting for it, so every later
 * query on that client hangs and the pool keeps handing it out (node-postgres issue #3399).
 * Destroyed, the client leaves the pool and the next query opens a new connection.
 */
class DroppingOnTimeoutClient extends pg.Client {
  override query(...args: unknown[]): never {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: Error | null, ...rest: unknown[]) => {
        this.dropIfTimedOut(error);
        callback(error, ...rest);
      };
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    if (result instanceof Promise) result.catch((error: Error) => this.dropIfTimedOut(error));
    return result as never;
  }

  private dropIfTimedOut(error: Error | null) {
    if (error?.message === 'Query read timeout')
      (this as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
  }
}

/**
 * No call waits forever: a query not answered in time fails and its connection is dropped
 * from the pool (a half-open one would otherwise hang every later query on it), the server
 * ends a statement that runs too long, a new connection must open in time, and idle ones are
 * probed by TCP keep-alive.
 */
export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const { queryTimeoutMs, connectTimeoutMs, keepAliveMs } = options.timeouts ?? DATABASE_DEFAULT_TIMEOUTS;
  const adapter = new PrismaPg({
    connectionString: databaseUrl,
    max: options.poolSize ?? 10,
    query_timeout: queryTimeoutMs,
    statement_timeout: queryTimeoutMs,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    keepAliveInitialDelayMillis: keepAliveMs,
    Client: DroppingOnTimeoutClient,
  });
  const prisma = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  if (options.onQuery) {
    const onQuery = options.onQuery;
    prisma.$on('query', (event) => onQuery(event.query));
  }
  return prisma;
}
