// The suite's own redis-server. Unlike test/support/redisServer.ts it can be killed and
// started again on the SAME port with the SAME arguments: Tally's processes keep their
// REDIS_URL, as they would when a production Redis restarts.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, writeSync } from 'node:fs';
import { Redis } from 'ioredis';
import { freePort, waitForPing } from '../support/redisServer.js';
import { onCleanup, trackChild } from './cleanup.js';

export interface OwnedRedis {
  url: string;
  port: number;
  /** A short-lived admin connection for one piece of work (faults, checks). */
  admin<T>(work: (redis: Redis) => Promise<T>): Promise<T>;
  /** SHUTDOWN NOSAVE: Redis exits without writing anything; with no AOF its data is gone. */
  shutdownNoSave(): Promise<void>;
  /** SIGKILL: no shutdown work at all (with AOF, what was written to the file survives). */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same arguments (empty, or from its AOF). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export async function startOwnedRedis(options: { extraArgs?: string[]; logFile: string }): Promise<OwnedRedis> {
  const port = await freePort();
  const url = `redis://127.0.0.1:${port}`;
  // Later arguments win: extraArgs may turn the AOF on.
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    ...(options.extraArgs ?? []),
  ];
  let child: ChildProcess | null = null;

  const exited = (c: ChildProcess) =>
    c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise<void>((r) => c.once('exit', () => r()));

  async function launch() {
    const log = openSync(options.logFile, 'a');
    writeSync(log, `=== redis-server ${args.join(' ')} at ${new Date().toISOString()}\n`);
    const started = spawn('redis-server', args, { stdio: ['ignore', log, log] });
    closeSync(log);
    trackChild(started);
    child = started;
    if (!(await waitForPing(url, started))) {
      started.kill('SIGKILL');
      throw new Error(`redis-server did not start on port ${port} (see ${options.logFile})`);
    }
  }

  async function admin<T>(work: (redis: Redis) => Promise<T>): Promise<T> {
    const redis = new Redis(url, { maxRetriesPerRequest: 1, retryStrategy: () => null, lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    try {
      return await work(redis);
    } finally {
      redis.disconnect();
    }
  }

  await launch();
  const stop = onCleanup(`redis-server :${port}`, async () => {
    if (!child) return;
    const c = child;
    c.kill('SIGKILL');
    await exited(c);
  });

  return {
    url,
    port,
    admin,
    async shutdownNoSave() {
      const c = child!;
      await admin((r) => r.call('SHUTDOWN', 'NOSAVE')).catch(() => {}); // the connection drops as it exits
      await exited(c);
    },
    async kill() {
      const c = child!;
      c.kill('SIGKILL');
      await exited(c);
    },
    restart: launch,
    stop,
  };
}
