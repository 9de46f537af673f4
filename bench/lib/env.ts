// The run's own PostgreSQL database and Redis key prefix, its settings, and the Node binaries the runtime comparison uses.
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { migrate } from '../../src/db/migrate.js';
import { projectPath } from '../../src/paths.js';
import { admin, databaseUrl, dropDatabase, TEST_REDIS_URL as REDIS_URL } from '../../test/support/env.js';
import { countKeys, deleteKeys } from '../../test/support/redis.js';

export type BenchEnv = Awaited<ReturnType<typeof createBenchEnv>>;

export async function createBenchEnv() {
  const id = randomBytes(4).toString('hex');
  const [databaseName, redisKeyPrefix] = [`tally_bench_${id}`, `bench${id}:`];
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
      const left = await admin((c) => c.query('SELECT 1 FROM pg_database WHERE datname = $1', [databaseName]));
      return { databasesLeft: left.rows.length, keysLeft: await countKeys(redisKeyPrefix) };
    },
  };
}

export const BENCH_JWT_SECRET = 'bench-secret-0123456789abcdef0123456789';

export const tallyEnv = (env: BenchEnv): Record<string, string> => ({
  NODE_ENV: 'production',
  LOG_LEVEL: 'warn',
  HOST: '127.0.0.1',
  PORT: '0',
  DATABASE_URL: env.databaseUrl,
  REDIS_URL: env.redisUrl,
  REDIS_KEY_PREFIX: env.redisKeyPrefix,
  JWT_SECRET: BENCH_JWT_SECRET,
  RATE_LIMIT_CHANGES: '1000000',
});

export function intSetting(name: string, fallback: number, max: number, min = 1): number {
  const raw = process.env[name];
  const n = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
  return n;
}

export type NodeBinary = { path: string; version: string };

const versionOf = (path: string) => execFileSync(path, ['--version'], { encoding: 'utf8' }).trim();

function findNode(major: 20 | 24): string {
  const onPath = (process.env.PATH ?? '').split(':').flatMap((dir) => (dir ? [join(dir, 'node')] : []));
  const found = [process.execPath, ...onPath].find((path) => {
    try {
      return versionOf(path).startsWith(`v${major}.`);
    } catch {
      return false; // no runnable node there
    }
  });
  if (found) return found;
  if (major === 20) throw new Error('no Node 20 on PATH');
  return join(execFileSync(projectPath('.ci/node24'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim(), 'node');
}

export function nodeBinaries(): NodeBinary[] {
  const listed = process.env.BENCH_NODE_BINARIES?.trim();
  if (listed === 'none') return [];
  try {
    const paths = listed ? listed.split(',').flatMap((p) => (p.trim() ? [p.trim()] : [])) : [findNode(20), findNode(24)];
    if (paths.length < 2) throw new Error('it needs at least two binaries');
    return paths.map((path) => ({ path, version: versionOf(path) }));
  } catch (error) {
    const set = 'set BENCH_NODE_BINARIES=/path/to/node20,/path/to/node24 (or none to skip it)';
    throw new Error(`runtime comparison: ${(error as Error).message}; ${set}`);
  }
}
