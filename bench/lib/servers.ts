// Parent side of bench/lib/serverProcess.ts: a server under test in its own Node process.
import { readFileSync } from 'node:fs';
import { projectPath } from '../../src/paths.js';
import { entryOf, startChild } from './child.js';
import type { RedisStats } from './redisStats.js';
import type { ServerKind } from './serverProcess.js';
import { waitForQuiet } from './waitFor.js';

export type ServerHandle = Awaited<ReturnType<typeof startServer>>;

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
 * `node`: the binary to run it on (the runtime comparison starts Tally on several);
 * `openFiles`: the open-files limit it needs; `extraFlags`: Node flags added to its usual ones.
 */
export async function startServer(
  kind: ServerKind,
  env: Record<string, string>,
  node = process.execPath,
  openFiles = 0,
  extraFlags: readonly string[] = [],
) {
  // BENCH_CPU_PROFILE_DIR: each server writes V8 CPU profiles (one per thread) under <dir>/<kind>/ when it exits.
  const dir = process.env.BENCH_CPU_PROFILE_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}/${kind}`] : [];
  const args = [...profile, ...nodeFlags(kind), ...extraFlags, ...entryOf('serverProcess'), kind];
  const child = await startChild<{ url: string }>(`${kind} server`, node, args, {
    env: { ...process.env, ...env },
    openFiles,
    readyWithinMs: 60_000,
  });
  /** Redis round trips and commands of the server's API connection so far; null without Redis. */
  const redisStats = () => child.call<RedisStats | null>('redisStats');
  return {
    kind,
    url: child.ready.url,
    pid: child.pid,
    redisStats,
    /** Resolves once the Redis stats stop moving: the requests a timed run left in flight are done (at most 5 s; a server busy longer is measured as it is). */
    settle: () =>
      waitForQuiet('', redisStats, 250, 5000).then(
        () => {},
        () => {},
      ),
    /** Tally only: fold every partition now instead of waiting for the next flush. */
    flush: () => child.call<number>('flush'),
    /** process.memoryUsage(), after a full collection when it runs with --expose-gc (`collected`). */
    memory: () => child.call<NodeJS.MemoryUsage & { collected: boolean }>('memory'),
    stop: child.stop,
  };
}
