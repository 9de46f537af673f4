// One Tally process of the split deployment (ROLE=api or ROLE=worker), run as deployed:
// `node --import tsx src/main.ts`, ONE node process, so `kill -9` hits the process that holds
// the leases and connections. Its output is appended to a log file that survives restarts.
import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { projectPath } from '../../src/paths.js';
import { onCleanup, trackChild } from './cleanup.js';

export interface TallyProcess {
  name: string;
  port: number;
  url: string;
  logFile: string;
  /** Starts it and waits for /readyz 200. */
  start(): Promise<void>;
  /** SIGKILL, and waits until it is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (a clean stop: leaves consumer groups, acknowledges), then SIGKILL after a grace period. */
  stop(graceMs?: number): Promise<void>;
  running(): boolean;
  /** SIGKILL if still running, and forget it (the deployment is done with it). */
  dispose(): Promise<void>;
}

const READY_TIMEOUT_MS = 90_000;

export function createTallyProcess(options: { name: string; port: number; env: Record<string, string>; logFile: string }): TallyProcess {
  const { name, port, logFile } = options;
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | null = null;

  const isRunning = (c: ChildProcess | null): c is ChildProcess => c !== null && c.exitCode === null && c.signalCode === null;
  const exited = (c: ChildProcess) => (isRunning(c) ? new Promise<void>((r) => c.once('exit', () => r())) : Promise.resolve());

  const logTail = () => {
    try {
      return readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      return '';
    }
  };

  async function waitReady(c: ChildProcess) {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (c.exitCode !== null || c.signalCode !== null)
        throw new Error(`${name} exited with ${c.exitCode ?? c.signalCode} while starting:\n${logTail()}`);
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS} ms:\n${logTail()}`);
  }

  const dispose = onCleanup(`tally ${name}`, async () => {
    if (isRunning(child)) {
      child.kill('SIGKILL');
      await exited(child);
    }
  });

  return {
    name,
    port,
    url,
    logFile,
    async start() {
      if (isRunning(child)) throw new Error(`${name} is already running`);
      const log = openSync(logFile, 'a');
      writeSync(log, `=== ${name} starting at ${new Date().toISOString()}\n`);
      const c = spawn(process.execPath, ['--import', 'tsx', projectPath('src/main.ts')], {
        cwd: projectPath(),
        // Only what a deployment sets: nothing leaks in from the harness' environment.
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...options.env, PORT: String(port) },
        stdio: ['ignore', log, log],
      });
      closeSync(log);
      trackChild(c);
      child = c;
      await waitReady(c);
    },
    async kill9() {
      if (!isRunning(child)) return;
      const c = child;
      c.kill('SIGKILL');
      await exited(c);
    },
    async stop(graceMs = 15_000) {
      if (!isRunning(child)) return;
      const c = child;
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
      await exited(c);
      clearTimeout(timer);
    },
    running: () => isRunning(child),
    dispose,
  };
}
