// What the numbers were measured on: they only compare within one run on one machine.
import os from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inGroups } from './seed.js';

export const loadAverage = () => os.loadavg().map((x) => Number(x.toFixed(2)));

/** The Redis server's version and the values of `names`, in the order CONFIG GET gives them. */
export async function redisSettings(redis: Redis, names: string[]) {
  const version = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown';
  return { version, ...Object.fromEntries(inGroups((await redis.call('CONFIG', 'GET', ...names)) as string[], 2)) };
}

export async function machineInfo(databaseUrl: string, redisUrl: string) {
  const redis = new Redis(redisUrl);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const settings = async (names: string[]) =>
      Object.fromEntries(await Promise.all(names.map(async (name) => [name, (await db.query(`SHOW ${name}`)).rows[0]?.[name] as string])));
    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverageStart: loadAverage(),
      redis: await redisSettings(redis, ['appendonly', 'appendfsync', 'save']),
      postgres: { version: (await settings(['server_version'])).server_version, ...(await settings(['synchronous_commit', 'fsync'])) },
    };
  } finally {
    redis.disconnect();
    await db.end();
  }
}
