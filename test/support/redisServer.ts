// A private redis-server for tests that must do what a shared Redis cannot survive
// (FLUSHALL, a restart). Nothing on disk; stopped at the end of the test file.
import { type ChildProcess, spawn } from 'node:child_process';
import { type AddressInfo, createServer } from 'node:net';
import { Redis } from 'ioredis';

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

export async function waitForPing(url: string, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 5000;
  while (Date.now() < deadline && child.exitCode === null) {
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    try {
      await probe.connect();
      if ((await probe.ping()) === 'PONG') return true;
    } catch {
      // not up yet
    } finally {
      probe.disconnect();
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}
