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

/** How every server under test runs on `env`: production mode, its database and prefix, no per-user rate limit. */
export function tallyEnv(env: BenchEnv): Record<string, string> {
  return {
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: env.databaseUrl,
    REDIS_URL: env.redisUrl,
    REDIS_KEY_PREFIX: env.redisKeyPrefix,
    JWT_SECRET: 'bench-secret-0123456789abcdef0123456789',
    // Throughput is measured, not abuse: no per-user rate limit.
    RATE_LIMIT_CHANGES: '1000000',
  };
}

/** An integer setting from `env`: `fallback` when unset, else an integer from `min` to `max`. */
export function intSetting(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  return n;
}
