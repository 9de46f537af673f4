// One Prisma client per process, on the pg driver adapter (Prisma 7 needs no engine binary).
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from './generated/client.js';

export type Db = PrismaClient<'query'>;

export interface DbOptions {
  /** Called for every SQL statement Prisma sends; tests count round trips with it. */
  onQuery?: (sql: string) => void;
  poolSize?: number;
}

export function createDb(databaseUrl: string, options: DbOptions = {}): Db {
  const adapter = new PrismaPg({ connectionString: databaseUrl, max: options.poolSize ?? 10 });
  const prisma = new PrismaClient({ adapter, log: [{ emit: 'event', level: 'query' }] });
  if (options.onQuery) {
    const onQuery = options.onQuery;
    prisma.$on('query', (event) => onQuery(event.query));
  }
  return prisma;
}
