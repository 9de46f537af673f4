// What the numbers were measured on: they only compare within one run on one machine.
import os from 'node:os';
import { Redis } from 'ioredis';
import pg from 'pg';

export async function machineInfo(databaseUrl: string, redisUrl: string) {
  const redis = new Redis(redisUrl);
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    const setting = async (name: string) => (await db.query(`SHOW ${name}`)).rows[0]?.[name] as string;
    const config = async (name: string) => ((await redis.config('GET', name)) as string[])[1] ?? null;
    return {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model ?? 'unknown',
      platform: `${os.platform()} ${os.release()} ${os.arch()}`,
      memoryGiB: Math.round(os.totalmem() / 2 ** 30),
      // Other work on the machine skews absolute numbers (compare ratios within one run).
      loadAverageStart: os.loadavg().map((x) => Number(x.toFixed(2))),
      redis: {
        version: /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? 'unknown',
        appendonly: await config('appendonly'),
        appendfsync: await config('appendfsync'),
        save: await config('save'),
      },
      postgres: {
        version: await setting('server_version'),
        synchronous_commit: await setting('synchronous_commit'),
        fsync: await setting('fsync'),
      },
    };
  } finally {
    redis.disconnect();
    await db.end();
  }
}

export type MachineInfo = Awaited<ReturnType<typeof machineInfo>>;
