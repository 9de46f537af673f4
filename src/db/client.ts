// One Prisma client per process, on the pg driver adapter (Prisma 7 needs no engine binary).
import { PrismaPg } from '@prisma/adapter-pg';
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
  });
  const prisma = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  if (options.onQuery) {
    const onQuery = options.onQuery;
    prisma.$on('query', (event) => onQuery(event.query));
  }
  return prisma;
}
