// Bench child processes over IPC ({ id: 0, result } once started, then { id, cmd, args } → { id, result | error }), the servers
// under test among them (bench/lib/serverProcess.ts).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { projectPath } from '../../src/paths.js';
import { waitFor } from '../../test/support/wait.js';
import type { RedisStats } from '../baselines/common.js';
import { localRedisPid, withOpenFiles } from './procStats.js';
import type { ServerKind } from './serverProcess.js';

/** The Node arguments that run bench/lib/<file>: compiled .js under `npm run bench`, else .ts through tsx. */
export function entryOf(file: string): string[] {
  const compiled = import.meta.url.endsWith('.js');
  const path = fileURLToPath(new URL(`./${file}.${compiled ? 'js' : 'ts'}`, import.meta.url));
  return compiled ? [path] : ['--import', 'tsx', path];
}

type ChildOptions = { env?: NodeJS.ProcessEnv; openFiles?: number; readyWithinMs: number };

export async function startChild<Ready>(name: string, node: string, args: string[], options: ChildOptions) {
  const [command, commandArgs] = withOpenFiles(node, args, options.openFiles ?? 0);
  const child = spawn(command, commandArgs, { cwd: projectPath(), env: options.env, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  child.on('message', (message: { id: number; result?: unknown; error?: string }) => {
    const waiter = pending.get(message.id);
    pending.delete(message.id);
    if (message.error) waiter?.reject(new Error(`${name}: ${message.error}`));
    else waiter?.resolve(message.result);
  });
  void exited.then((code) => {
    for (const waiter of pending.values()) waiter.reject(new Error(`${name} exited with code ${code}`));
    pending.clear();
  });
  const late = () => pending.get(0)?.reject(new Error(`${name} did not start within ${options.readyWithinMs / 1000} s`));
  const timer = setTimeout(late, options.readyWithinMs);
  const ready = new Promise<Ready>((resolve, reject) => pending.set(0, { resolve, reject })).finally(() => clearTimeout(timer));
  const gone = () => child.exitCode !== null || child.signalCode !== null;
  return {
    ready: await ready.catch((error: unknown) => {
      child.kill('SIGKILL');
      throw error;
    }),
    pid: child.pid!,
    call: <T>(cmd: string, args?: unknown) =>
      new Promise<T>((resolve, reject) => {
        if (gone()) return reject(new Error(`${name} is gone`));
        const id = nextId++;
        pending.set(id, { resolve, reject });
        child.send({ id, cmd, args });
      }),
    /** Closes the IPC channel, which ends the child; kills it after 15 s. Never throws. */
    async stop() {
      if (gone()) return;
      child.disconnect();
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function serveParent(commands: Record<string, (args: any) => unknown>, ready: object, onExit: () => Promise<unknown>) {
  process.on('disconnect', () => void onExit().finally(() => process.exit(0)));
  process.on('message', async (message: { id: number; cmd: string; args?: unknown }) => {
    try {
      const command = commands[message.cmd];
      if (!command) throw new Error(`unknown command ${message.cmd}`);
      process.send?.({ id: message.id, result: await command(message.args) });
    } catch (error) {
      process.send?.({ id: message.id, error: String((error as Error).stack ?? error) });
    }
  });
  process.send!({ id: 0, result: ready });
}

export async function waitForQuiet<T>(read: () => Promise<T>, quietMs: number, timeoutMs: number): Promise<T> {
  let [last, since] = ['', Date.now()];
  const quiet = async () => {
    const value = await read();
    const now = JSON.stringify(value);
    if (now !== last) [last, since] = [now, Date.now()];
    return { value, quiet: Date.now() - since >= quietMs };
  };
  return (await waitFor(quiet, (x) => x.quiet, { timeoutMs, intervalMs: 250, what: 'an answer that stops changing' })).value;
}

export type ServerHandle = Awaited<ReturnType<typeof startServer>>;
type Env = Record<string, string>;
const noop = () => {};

/** Tally and the reference (d) run as `npm start` runs Tally (or with BENCH_NODE_FLAGS); the other baselines with Node's defaults. */
const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? JSON.parse(readFileSync(projectPath('package.json'), 'utf8')).config?.nodeFlags ?? '')
  .split(' ')
  .filter(Boolean);

export async function startServer(kind: ServerKind, env: Env, node = process.execPath, openFiles = 0, more: string[] = []) {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}/${kind}`] : [];
  const args = [...profile, ...(kind === 'tally' || kind === 'jit-feed' ? nodeFlags : []), ...more, ...entryOf('serverProcess'), kind];
  const options = { env: { ...process.env, ...env }, openFiles, readyWithinMs: 60_000 };
  const child = await startChild<{ url: string }>(`${kind} server`, node, args, options);
  const redisStats = () => child.call<RedisStats | null>('redisStats');
  return {
    kind,
    url: child.ready.url,
    pid: child.pid,
    redisStats,
    /** Once the Redis stats stop moving (at most 5 s): what a timed run left in flight is done. */
    settle: () => waitForQuiet(redisStats, 250, 5000).then(noop, noop),
    flush: () => child.call<number>('flush'),
    memory: () => child.call<NodeJS.MemoryUsage & { collected: boolean }>('memory'),
    stop: child.stop,
  };
}

export async function startDeployment(env: Env, openFiles = 0, apiFlags: string[] = []) {
  const worker = await startServer('tally', { ...env, ROLE: 'worker' });
  const stopWorker = (error: unknown) => worker.stop().then(() => Promise.reject(error));
  const api = await startServer('tally', { ...env, ROLE: 'api' }, process.execPath, openFiles, apiFlags).catch(stopWorker);
  const pids = { api: api.pid, worker: worker.pid, redis: await localRedisPid(env.REDIS_URL!) };
  return { api, worker, pids, stop: () => api.stop().then(worker.stop) };
}
