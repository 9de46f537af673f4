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

const READ_TIMEOUT = 'Query read timeout';
/** Longest a timed-out query's caller waits for the dropped connections to leave the pool. */
const DROP_WAIT_MS = 1000;

type PgClient = InstanceType<typeof pg.Client>;
const destroy = (client: PgClient) => (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();

/**
 * pg's client, except that a query that timed out on the wire takes its connection down: pg
 * stops waiting for the answer but leaves the connection waiting for it, so every later
 * query on that client hangs and the pool keeps handing it out (node-postgres issue #3399).
 * Destroyed, the client leaves the pool and the next query opens a new connection. So do the
 * pool's idle connections that have answered nothing since that query was sent: a network
 * that stopped carrying one connection (a NAT or proxy that lost its state) stopped carrying
 * every one open then, and each would cost a whole timeout to find out, one after another.
 */
function clientDroppingOnTimeout() {
  const clients = new Set<DroppingOnTimeoutClient>();
  // Orders sends and answers strictly: two in the same millisecond are still before and after.
  let clock = 0;

  class DroppingOnTimeoutClient extends pg.Client {
    private lastAnswerAt = ++clock;
    private inFlight = 0;

    constructor(...args: ConstructorParameters<typeof pg.Client>) {
      super(...args);
      clients.add(this);
      this.once('end', () => clients.delete(this));
    }

    override query(...args: unknown[]): never {
      const sentAt = ++clock;
      const last = args.length - 1;
      const callback = args[last];
      if (typeof callback === 'function') {
        this.inFlight++;
        args[last] = (error: Error | null, ...rest: unknown[]) => {
          const dropping = this.answered(error, sentAt);
          if (dropping) void dropping.then(() => callback(error, ...rest));
          else callback(error, ...rest);
        };
      }
      const result = (super.query as (...a: unknown[]) => unknown)(...args);
      if (!(result instanceof Promise)) return result as never;
      this.inFlight++;
      return result.then(
        (value) => {
          this.answered(null, sentAt);
          return value;
        },
        async (error: Error) => {
          await this.answered(error, sentAt);
          throw error;
        },
      ) as never;
    }

    /** A query ended; after a read timeout, the connections dropped (a promise: the caller waits for it). */
    private answered(error: Error | null, sentAt: number): Promise<void> | null {
      this.inFlight--;
      if (!error) this.lastAnswerAt = ++clock;
      return error?.message === READ_TIMEOUT ? this.dropStalled(sentAt) : null;
    }

    /** Resolves once the idle connections dropped with this one have left the pool, so the caller's next query cannot get one. */
    private async dropStalled(sentAt: number): Promise<void> {
      const idle = [...clients].filter((c) => c !== this && c.inFlight === 0 && c.lastAnswerAt < sentAt);
      const ended = idle.map((c) => new Promise((resolve) => c.once('end', resolve)));
      for (const c of idle) destroy(c);
      if (idle.length > 0) await Promise.race([Promise.all(ended), new Promise((resolve) => setTimeout(resolve, DROP_WAIT_MS))]);
      destroy(this);
    }
  }
  return DroppingOnTimeoutClient;
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
    Client: clientDroppingOnTimeout(),
  });
  const prisma = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  if (options.onQuery) {
    const onQuery = options.onQuery;
    prisma.$on('query', (event) => onQuery(event.query));
  }
  return prisma;
}
