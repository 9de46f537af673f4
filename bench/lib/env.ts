// The bench's own PostgreSQL database and Redis key prefix, created fresh for one run and
// removed at the end (same approach as test/support: CREATE/DROP DATABASE via the admin
// database, keys deleted by prefix with SCAN).
import { randomBytes } from 'node:crypto';
import { migrate } from '../../src/db/migrate.js';
import { admin, databaseUrl, dropDatabase, TEST_REDIS_URL as REDIS_URL } from '../../test/support/env.js';
import { countKeys, deleteKeys } from '../../test/support/redis.js';

export const DATABASE_PREFIX = 'tally_bench_';
export interface BenchEnv {
  databaseName: string;
  databaseUrl: string;
  redisUrl: string;
  redisKeyPrefix: string;
  cleanup(): Promise<{ databasesLeft: number; keysLeft: number }>;
}

export async function createBenchEnv(): Promise<BenchEnv> {
  const id = randomBytes(4).toString('hex');
  const databaseName = `${DATABASE_PREFIX}${id}`;
  const redisKeyPrefix = `bench${id}:`;
  await admin((c) => c.query(`CREATE DATABASE "${databaseName}"`));
  const url = databaseUrl(databaseName);
  await migrate(url);

  return {
    databaseName,
    databaseUrl: url,
    redisUrl: REDIS_URL,
    redisKeyPrefix,
    async cleanup() {
      await dropDatabase(databaseName);
      await deleteKeys(redisKeyPrefix);
      // Report what is left, so a leak shows in the run's output rather than on the machine.
      const databasesLeft = await admin(async (c) => {
        const { rows } = await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]);
        return rows.length;
      });
      return { databasesLeft, keysLeft: await countKeys(redisKeyPrefix) };
    },
  };
}
