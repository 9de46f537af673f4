// Parent side of bench/lib/serverProcess.ts: spawn a server under test in its own Node
// process and talk to it over IPC.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../src/paths.js';
import { withOpenFiles } from './procStats.js';
import type { RedisStats } from './redisStats.js';
import type { ServerKind } from './serverProcess.js';

export interface ServerHandle {
  kind: ServerKind;
  url: string;
  pid: number;
  /** Redis round trips and commands of the server's API connection so far; null without Redis. */
  redisStats(): Promise<RedisStats | null>;
  /**
   * Resolves once the server has finished the requests a timed run left in flight (its Redis
   * stats stop moving), so they are not counted in the next measurement. For servers with Redis.
   */
  settle(): Promise<void>;
  /** Tally only: fold every partition now instead of waiting for the next 1 s flush. */
  flush(): Promise<number>;
  /** process.memoryUsage() of the server, after a full collection if it runs with --expose-gc (`collected`). */
  memory(): Promise<NodeJS.MemoryUsage & { collected: boolean }>;
  stop(): Promise<void>;
}

// The compiled bench (npm run bench) starts compiled servers; run from TypeScript (tsx), it
// starts them through tsx.
const compiled = import.meta.url.endsWith('.js');
const entry = compiled
  ? [fileURLToPath(new URL('./serverProcess.js', import.meta.url))]
  : ['--import', 'tsx', fileURLToPath(new URL('./serverProcess.ts', import.meta.url))];

/** The Node flags `npm start` runs Tally with (package.json "config".nodeFlags). */
const TALLY_NODE_FLAGS: string[] = (JSON.parse(readFileSync(projectPath('package.json'), 'utf8')).config?.nodeFlags ?? '')
  .split(' ')
  .filter(Boolean);

/**
 * Node's flags for a server: Tally and the reference built from its parts run as `npm start`
 * runs Tally; the baselines that stand for what a user would build run with Node's defaults.
 * BENCH_NODE_FLAGS replaces them for Tally and the reference (to measure a flag).
 */
function nodeFlags(kind: ServerKind): string[] {
  if (kind !== 'tally' && kind !== 'jit-feed') return [];
  return process.env.BENCH_NODE_FLAGS !== undefined ? process.env.BENCH_NODE_FLAGS.split(' ').filter(Boolean) : TALLY_NODE_FLAGS;
}

/**
 * `node`: the Node binary to run it on (the runtime comparison starts Tally on several).
 * `openFiles`: the open-files limit it needs (the live scenario's thousands of sockets).
 * `extraFlags`: Node flags added to its usual ones (the live scenario's --expose-gc, to
 * measure live memory).
 */
export async function startServer(
  kind: ServerKind,
  env: Record<string, string>,
  node = process.execPath,
  openFiles = 0,
  extraFlags: readonly string[] = [],
): Promise<ServerHandle> {
  // BENCH_CPU_PROFILE_DIR: each server writes V8 CPU profiles (one per thread) under <dir>/<kind>/ when it exits.
  const profileDir = process.env.BENCH_CPU_PROFILE_DIR;
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}/${kind}`] : [];
  const [command, args] = withOpenFiles(node, [...profile, ...nodeFlags(kind), ...extraFlags, ...entry, kind], openFiles);
  const child = spawn(command, args, {
    cwd: projectPath(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));

  let nextId = 1;
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  const ready = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${kind} server did not start within 60 s`)), 60_000);
    child.on('message', (message: { type?: string; url?: string; id?: number; result?: unknown; error?: string }) => {
      if (message.type === 'ready') {
        clearTimeout(timer);
        resolve(message.url!);
        return;
      }
      const waiter = pending.get(message.id!);
      pending.delete(message.id!);
      if (message.error) waiter?.reject(new Error(message.error));
      else waiter?.resolve(message.result);
    });
    void exited.then((code) => {
      clearTimeout(timer);
      const error = new Error(`${kind} server exited with code ${code}`);
      reject(error);
      for (const waiter of pending.values()) waiter.reject(error); // calls in flight would hang
      pending.clear();
    });
  });
  const url = await ready.catch((error: unknown) => {
    child.kill('SIGKILL'); // a server that failed to start must not linger
    throw error;
  });

  const call = <T>(cmd: string) =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve, reject });
      child.send({ id, cmd });
    });

  return {
    kind,
    url,
    pid: child.pid!,
    redisStats: () => call<RedisStats | null>('redisStats'),
    async settle() {
      let last = JSON.stringify(await call('redisStats'));
      for (let i = 0; i < 20; i++) {
        await new Promise((r) => setTimeout(r, 250));
        const now = JSON.stringify(await call('redisStats'));
        if (now === last) return;
        last = now;
      }
    },
    flush: () => call<number>('flush'),
    memory: () => call('memory'),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.send({ id: 0, cmd: 'stop' });
      // A graceful stop takes well under a second; never leave a process behind.
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
