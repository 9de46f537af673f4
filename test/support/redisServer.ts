// A private redis-server for tests that must do what a shared Redis cannot survive
// (FLUSHALL, a restart). Nothing on disk; stopped at the end of the test file.
import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { Redis } from 'ioredis';
import { waitUntil } from './wait.js';

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export interface RedisServer {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startRedisServer(extraArgs: string[] = []): Promise<RedisServer> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const child: ChildProcess = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--daemonize', 'no', ...extraArgs],
      { stdio: 'ignore' },
    );
    const url = `redis://127.0.0.1:${port}`;
    const ready = await waitForPing(url, child);
    if (ready) {
      return {
        url,
        port,
        stop: () =>
          new Promise<void>((resolve) => {
            if (child.exitCode !== null) return resolve();
            child.once('exit', () => resolve());
            child.kill('SIGTERM');
          }),
      };
    }
    child.kill('SIGKILL');
    if (attempt >= 3) throw new Error('redis-server did not start');
  }
}

async function pings(url: string): Promise<boolean> {
  const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false; // not up yet
  } finally {
    probe.disconnect();
  }
}

/** Whether the server `child` started answers PING within 5 s (false once it has exited). */
export async function waitForPing(url: string, child: ChildProcess): Promise<boolean> {
  return waitUntil(async () => child.exitCode !== null || (await pings(url)), { what: `${url} to answer PING`, timeoutMs: 5000 }).then(
    () => child.exitCode === null,
    () => false,
  );
}
