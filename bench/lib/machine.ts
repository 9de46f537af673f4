// What the numbers were measured on: they only compare within one run on one machine.
import os from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';

export const loadAverage = () => os.loadavg().map((x) => Number(x.toFixed(2)));

export async function machineInfo(databaseUrl: string, redisUrl: string) {
  const redis = new Redis(redisUrl);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const settings = async (names: string[]) =>
      Object.fromEntries(await Promise.all(names.map(async (name) => [name, (await db.query(`SHOW ${name}`)).rows[0]?.[name] as string])));
    const config = async (names: string[]) =>
      Object.fromEntries(await Promise.all(names.map(async (name) => [name, ((await redis.config('GET', name)) as string[])[1] ?? null])));
    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      loadAverageStart: loadAverage(),
      redis: {
        version: /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown',
        ...(await config(['appendonly', 'appendfsync', 'save'])),
      },
      postgres: { version: (await settings(['server_version'])).server_version, ...(await settings(['synchronous_commit', 'fsync'])) },
    };
  } finally {
    redis.disconnect();
    await db.end();
  }
}
