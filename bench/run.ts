// `npm run bench [scenario …]`: the named scenarios (every one, in SCENARIOS order, when none
// is named), each server under test in a child process and the load generated here, on
// databases and Redis key prefixes the run creates and removes (also when interrupted). Prints
// each scenario's table and writes bench/results/latest.json (or <names>.json for a subset).
// Scenarios and settings: docs/performance.md ("The bench").
import os from 'node:os';
import { Redis } from 'ioredis';
import { projectPath } from '../src/paths.js';
import { ADMIN_DATABASE_URL, TEST_REDIS_URL } from '../test/support/env.js';
import { type BenchEnv, createBenchEnv, intSetting, tallyEnv } from './lib/env.js';
import { machineInfo } from './lib/machine.js';
import { nodeBinaries } from './lib/nodeBinaries.js';
import { formatTable, type Ratio, targetsOf, writeResults } from './lib/report.js';
import { seedWorld, USERS, type World } from './lib/seed.js';
import { erasureSettings, runErasureScenario } from './scenarios/erasure.js';
import { erasureCorrect, erasureTable, erasureTargets } from './scenarios/erasureReport.js';
import {
  FEED_CONNECTIONS,
  FEED_ROUNDS,
  FEED_SERVERS,
  feedRatios,
  feedRows,
  PAGES,
  runFeedScenario,
  runRuntimeScenario,
  runtimeRatios,
  runtimeRows,
} from './scenarios/feed.js';
import { likeRatios, likeRows, runLikeScenario } from './scenarios/likes.js';
import { liveSettings, runLiveScenario } from './scenarios/live.js';
import { livePassed, liveRatios, liveTable } from './scenarios/liveReport.js';
import { memoryDb, memoryRatios, memoryTable, runMemoryScenario } from './scenarios/memory.js';

interface Outcome {
  results: unknown;
  table: string;
  ratios: Ratio[];
  /** The targets as the JSON lists them, when they are not the ratios'. */
  targets?: unknown[];
  /** False: a count was off or a request failed (the run exits 1). */
  passed: boolean;
}

interface Context {
  /** The seeded feed and hot-post world, on the run's main database and prefix (seeded once). */
  world(): Promise<{ world: World; serverEnv: Record<string, string> }>;
  /** A database and key prefix for this scenario alone. */
  freshEnv(): Promise<BenchEnv>;
  /** Runs `undo` if the run is interrupted. */
  onInterrupt(undo: () => Promise<unknown>): void;
  log(line: string): void;
}

/** Each scenario reads its settings when prepared (before anything is created) and returns its run, or null to skip. */
type Scenario = () => ((ctx: Context) => Promise<Outcome>) | null;

const int = (name: string, fallback: number, max: number) => intSetting(process.env, name, fallback, 1, max);
const timing = () => {
  const durationS = int('BENCH_DURATION_S', 6, 3600);
  return { durationS, warmupS: Math.min(2, durationS) };
};

const SCENARIOS: Record<string, Scenario> = {
  feed: () => {
    const { durationS, warmupS } = timing();
    return async ({ world, log }) => {
      log(
        `feed: pages of ${PAGES.join(' and ')} posts, ${FEED_SERVERS.length} servers, ${FEED_CONNECTIONS} connections, ${warmupS} s warm-up + ${durationS} s each in ${FEED_ROUNDS} rounds`,
      );
      const feed = await runFeedScenario({ ...(await world()), durationS, warmupS });
      const ratios = feedRatios(feed.runs, feed.roundTripsByPage);
      const results = { settings: { durationS, warmupS, pages: PAGES, servers: FEED_SERVERS, connections: FEED_CONNECTIONS }, ...feed };
      return { results, table: formatTable(feedRows(feed.runs), ratios), ratios, passed: feed.runs.every((r) => r.load.failures === 0) };
    };
  },
  runtimes: () => {
    const { durationS, warmupS } = timing();
    // Found (or installed) before anything is created: a missing one costs seconds, not a run.
    const binaries = nodeBinaries();
    if (binaries.length === 0) return null;
    return async ({ world, log }) => {
      log(
        `runtimes: Tally's feed, pages of ${PAGES.join(' and ')}, on ${binaries.map((b) => `Node ${b.version} (${b.path})`).join(' vs ')}`,
      );
      const runs = await runRuntimeScenario({ ...(await world()), binaries, durationS, warmupS });
      const ratios = runtimeRatios(runs);
      const passed = runs.every((r) => r.load.failures === 0);
      return {
        results: { settings: { durationS, warmupS, binaries }, runs },
        table: formatTable(runtimeRows(runs), ratios),
        ratios,
        passed,
      };
    };
  },
  'hot-post': () => {
    const likes = int('BENCH_LIKES', 20_000, 10_000_000);
    return async ({ world, log }) => {
      log(`hot post: ${likes} distinct users like one post, per server`);
      const like = await runLikeScenario({ ...(await world()), likes });
      const ratios = likeRatios(like.runs);
      const passed = like.runs.every((r) => r.exact && r.load.failures === 0);
      return { results: like, table: formatTable(likeRows(like.runs, like.likes), ratios), ratios, passed };
    };
  },
  memory: () => {
    const db = memoryDb();
    return async ({ onInterrupt, log }) => {
      log(`memory: Redis bytes per relation and per counted entity, Redis database ${db} (no servers)`);
      onInterrupt(async () => new Redis(TEST_REDIS_URL, { db }).flushdb());
      const memory = await runMemoryScenario({ redisUrl: TEST_REDIS_URL, db, log: console.log });
      return { results: memory, table: memoryTable(memory), ratios: memoryRatios(memory), passed: true };
    };
  },
  live: () => {
    const settings = liveSettings();
    return async ({ freshEnv, log }) => {
      const env = await freshEnv();
      log(
        `live counts: ${settings.sockets} sockets vs ${settings.pollers} pollers, ${settings.likesPerS} likes/s for ${settings.durationS} s per phase`,
      );
      const live = await runLiveScenario({ env, settings, log: console.log });
      return { results: live, table: liveTable(live), ratios: liveRatios(live), passed: livePassed(live) };
    };
  },
  erasure: () => {
    const settings = erasureSettings();
    return async ({ freshEnv, log }) => {
      const env = await freshEnv();
      log(
        `account erasure: a victim with ${settings.likes} likes, erased under ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s`,
      );
      const erasure = await runErasureScenario({ env, settings, log: console.log });
      // A count off or something of the victim left fails the run; a slowdown is measured, not a failure.
      return {
        results: erasure,
        table: erasureTable(erasure),
        ratios: [],
        targets: erasureTargets(erasure),
        passed: erasureCorrect(erasure),
      };
    };
  },
};

const names = process.argv.slice(2);
const unknown = names.filter((n) => !SCENARIOS[n]);
if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; the scenarios: ${Object.keys(SCENARIOS).join(', ')}`);
const chosen = names.length > 0 ? names : Object.keys(SCENARIOS);
const runs = chosen.flatMap((name) => {
  const run = SCENARIOS[name]!();
  return run ? [{ name, run }] : [];
});

const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);
const envs: BenchEnv[] = [];
const undos: (() => Promise<unknown>)[] = [];
const freshEnv = async () => {
  const env = await createBenchEnv();
  envs.push(env);
  console.log(`  database ${env.databaseName}, Redis prefix ${env.redisKeyPrefix}`);
  return env;
};
let seeded: ReturnType<Context['world']> | null = null;
const world = () =>
  (seeded ??= freshEnv().then(async (env) => {
    const serverEnv = tallyEnv(env);
    const world = await seedWorld(serverEnv);
    log(
      `seeded ${USERS} users, ${world.expected.size} posts, ${[...world.expected.values()].reduce((n, e) => n + e.likes + e.favs, 0)} likes and favs (flushed)`,
    );
    return { world, serverEnv };
  }));
let cleaned: Promise<{ databasesLeft: number; keysLeft: number }[]> | null = null;
const cleanup = () => (cleaned ??= Promise.all(envs.map((e) => e.cleanup())));
// Interrupted: the children exit on their own when their IPC channel closes; drop the data here.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void Promise.all([cleanup(), ...undos.map((undo) => undo())]).finally(() => process.exit(130)));
}

const outcomes: Record<string, Outcome> = {};
try {
  const machine = await machineInfo(ADMIN_DATABASE_URL, TEST_REDIS_URL);
  for (const { name, run } of runs) outcomes[name] = await run({ world, freshEnv, onInterrupt: (undo) => undos.push(undo), log });
  const table = Object.values(outcomes)
    .map((o) => o.table)
    .join('\n\n');
  console.log(`\n${table}\n`);
  const path = projectPath(`bench/results/${names.length > 0 ? names.join('+') : 'latest'}.json`);
  await writeResults(path, {
    machine: { ...machine, loadAverageEnd: os.loadavg().map((x) => Number(x.toFixed(2))) },
    ...Object.fromEntries(Object.entries(outcomes).map(([name, o]) => [name, o.results])),
    targets: Object.fromEntries(Object.entries(outcomes).map(([name, o]) => [name, o.targets ?? targetsOf(o.ratios)])),
    ratios: Object.fromEntries(Object.values(outcomes).flatMap((o) => o.ratios.map((r) => [r.label, Number(r.value.toFixed(3))]))),
    table,
  });
  log(`results written to ${path}`);
  if (Object.values(outcomes).some((o) => !o.passed)) process.exitCode = 1;
} finally {
  const left = await cleanup();
  const [databases, keys] = [left.reduce((n, l) => n + l.databasesLeft, 0), left.reduce((n, l) => n + l.keysLeft, 0)];
  log(`cleaned up: ${databases} database(s), ${keys} key(s) left under ${envs.map((e) => e.redisKeyPrefix).join(' and ') || 'no prefix'}`);
  if (databases + keys > 0) process.exitCode = 1;
}
