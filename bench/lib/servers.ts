// Parent side of bench/lib/serverProcess.ts: a server under test in its own Node process.
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/paths.js';
import { entryOf, startChild } from './child.js';
import { localRedisPid } from './procStats.js';
import type { RedisStats } from './redisStats.js';
import type { ServerKind } from './serverProcess.js';
import { waitForQuiet } from './waitFor.js';

export type ServerHandle = Awaited<ReturnType<typeof startServer>>;

const flags = (text: string | undefined) => (text ?? '').split(' ').filter(Boolean);
const TALLY_NODE_FLAGS = flags(JSON.parse(readFileSync(projectPath('package.json'), 'utf8')).config?.nodeFlags);
/** Tally and the reference (d) run as `npm start` runs Tally (or with BENCH_NODE_FLAGS); the other baselines with Node's defaults. */
const nodeFlags = (kind: ServerKind) =>
  kind !== 'tally' && kind !== 'jit-feed'
    ? []
    : process.env.BENCH_NODE_FLAGS !== undefined
      ? flags(process.env.BENCH_NODE_FLAGS)
      : TALLY_NODE_FLAGS;

export async function startServer(
  kind: ServerKind,
  env: Record<string, string>,
  node = process.execPath,
  openFiles = 0,
  extraFlags: string[] = [],
) {
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}/${kind}`] : [];
  const args = [...profile, ...nodeFlags(kind), ...extraFlags, ...entryOf('serverProcess'), kind];
  const child = await startChild<{ url: string }>(`${kind} server`, node, args, {
    env: { ...process.env, ...env },
    openFiles,
    readyWithinMs: 60_000,
  });
  /** The server's API connection's Redis round trips and commands so far; null without Redis. */
  const redisStats = () => child.call<RedisStats | null>('redisStats');
  return {
    kind,
    url: child.ready.url,
    pid: child.pid,
    redisStats,
    /** Once the Redis stats stop moving (at most 5 s): what a timed run left in flight is done. */
    settle: () =>
      waitForQuiet(redisStats, 250, 5000).then(
        () => {},
        () => {},
      ),
    /** Tally: fold every partition now. */
    flush: () => child.call<number>('flush'),
    /** process.memoryUsage(), after a full collection when it runs with --expose-gc (`collected`). */
    memory: () => child.call<NodeJS.MemoryUsage & { collected: boolean }>('memory'),
    stop: child.stop,
  };
}

/** Tally as deployed: one worker and one API process on `env`; `stop` stops both. */
export async function startDeployment(env: Record<string, string>, openFiles = 0, apiFlags: string[] = []) {
  const worker = await startServer('tally', { ...env, ROLE: 'worker' });
  const api = await startServer('tally', { ...env, ROLE: 'api' }, process.execPath, openFiles, apiFlags).catch(async (error) => {
    await worker.stop();
    throw error;
  });
  const pids = { api: api.pid, worker: worker.pid, redis: await localRedisPid(env.REDIS_URL!) };
  return { api, worker, pids, stop: () => api.stop().then(worker.stop) };
}
