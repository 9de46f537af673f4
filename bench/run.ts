// `npm run bench [scenario …]`: the named scenarios (all, in SCENARIOS order, when none is named); docs/performance.md, "The bench".
import { Redis } from 'ioredis';
import { projectPath } from '../src/paths.js';
import { ADMIN_DATABASE_URL, TEST_REDIS_URL } from '../test/support/env.js';
import { type BenchEnv, createBenchEnv, intSetting, nodeBinaries, tallyEnv } from './lib/env.js';
import { CONNECTIONS, ROUNDS } from './lib/load.js';
import { formatTable, loadAverage, machineInfo, type Ratio, type TableRow, targetsOf, writeResults } from './lib/report.js';
import { seedWorld, USERS, type World } from './lib/seed.js';
import { erasureCorrect, erasureSettings, erasureTable, erasureTargets, runErasureScenario } from './scenarios/erasure.js';
import * as feed from './scenarios/feed.js';
import { gatewayRatios, gatewayRows, runGatewayScenario } from './scenarios/gateway.js';
import { likeRatios, likeRows, runLikeScenario } from './scenarios/likes.js';
import { liveSettings, runLiveScenario } from './scenarios/live.js';
import { livePassed, liveRatios, liveTable } from './scenarios/liveMeasure.js';
import { memoryDb, memoryRatios, memoryTable, runMemoryScenario } from './scenarios/memory.js';
import { runViewScenario, viewRatios, viewTable } from './scenarios/views.js';

/** `targets`: as the JSON lists them, when they are not the ratios'; `passed` false: a count was off or a request failed. */
type Outcome = { results: unknown; table: string; ratios: Ratio[]; targets?: unknown[]; passed: boolean };
type Context = {
  world(): Promise<{ world: World; serverEnv: Record<string, string> }>;
  freshEnv(): Promise<BenchEnv>;
  onInterrupt(undo: () => Promise<unknown>): void;
  log(line: string): void;
};
/** Reads its settings before anything is created and returns its run, or null to skip. */
type Scenario = () => ((ctx: Context) => Promise<Outcome>) | null;

const timing = () => {
  const durationS = intSetting('BENCH_DURATION_S', 6, 3600);
  return { durationS, warmupS: Math.min(2, durationS) };
};
type Runs = { load: { failures: number } }[];
const noFailures = (runs: Runs) => runs.every((r) => r.load.failures === 0);
const rowsOutcome = (results: unknown, runs: Runs, rows: TableRow[], ratios: Ratio[], passed = noFailures(runs)): Outcome => {
  return { results, table: formatTable(rows, ratios), ratios, passed };
};

const SCENARIOS: Record<string, Scenario> = {
  feed: () => {
    const { durationS, warmupS } = timing();
    return async ({ world, log }) => {
      const each = `${CONNECTIONS} connections, ${warmupS} s warm-up + ${durationS} s each in ${ROUNDS} rounds`;
      log(`feed: pages of ${feed.PAGES.join(' and ')} posts, ${feed.FEED_SERVERS.length} servers, ${each}`);
      const run = await feed.runFeedScenario({ ...(await world()), durationS, warmupS });
      const settings = { durationS, warmupS, pages: feed.PAGES, servers: feed.FEED_SERVERS, connections: CONNECTIONS };
      return rowsOutcome({ settings, ...run }, run.runs, feed.feedRows(run.runs), feed.feedRatios(run.runs, run.roundTripsByPage));
    };
  },
  runtimes: () => {
    const { durationS, warmupS } = timing();
    const binaries = nodeBinaries(); // found (or installed) before anything is created
    if (binaries.length === 0) return null;
    return async ({ world, log }) => {
      const nodes = binaries.map((b) => `Node ${b.version} (${b.path})`).join(' vs ');
      log(`runtimes: Tally's feed, pages of ${feed.PAGES.join(' and ')}, on ${nodes}`);
      const runs = await feed.runRuntimeScenario({ ...(await world()), binaries, durationS, warmupS });
      return rowsOutcome({ settings: { durationS, warmupS, binaries }, runs }, runs, feed.runtimeRows(runs), feed.runtimeRatios(runs));
    };
  },
  gateway: () => {
    const { durationS, warmupS } = timing();
    return async ({ freshEnv, log }) => {
      const each = `${warmupS} s warm-up + ${durationS} s each`;
      log(`gateway: 20 entities a product owns, through an Apollo Gateway and from Tally directly, ${each}`);
      const runs = await runGatewayScenario({ env: await freshEnv(), durationS, warmupS });
      const results = { method: 'docs/performance.md#through-a-gateway', settings: { durationS, warmupS }, runs };
      return rowsOutcome(results, runs, gatewayRows(runs), gatewayRatios(runs));
    };
  },
  'hot-post': () => {
    const likes = intSetting('BENCH_LIKES', 20_000, 10_000_000);
    return async ({ world, log }) => {
      log(`hot post: ${likes} distinct users like one post, per server; on Tally they also react to another, 8 kinds mixed`);
      const like = await runLikeScenario({ ...(await world()), likes });
      const passed = like.runs.every((r) => r.exact) && noFailures(like.runs);
      return rowsOutcome(like, like.runs, likeRows(like.runs, like.likes), likeRatios(like.runs), passed);
    };
  },
  views: () => {
    const requests = intSetting('BENCH_VIEW_REQUESTS', 2000, 1_000_000, 20);
    return async ({ world, log }) => {
      log(`views: server CPU per request, ${requests} recordViews of 20 posts against ${requests} likes, distinct users, 3 rounds`);
      const views = await runViewScenario({ ...(await world()), requests });
      return { results: views, table: viewTable(views), ratios: viewRatios(views), passed: true };
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
      const { sockets, pollers, likesPerS, durationS } = settings;
      log(`live counts: ${sockets} sockets vs ${pollers} pollers, ${likesPerS} likes/s for ${durationS} s per phase`);
      const live = await runLiveScenario({ env, settings, log: console.log });
      return { results: live, table: liveTable(live), ratios: liveRatios(live), passed: livePassed(live) };
    };
  },
  erasure: () => {
    const settings = erasureSettings();
    return async ({ freshEnv, log }) => {
      const env = await freshEnv();
      const { likes, feedPerS, likesPerS } = settings;
      log(`account erasure: a victim with ${likes} likes, erased under ${feedPerS} feed pages/s + ${likesPerS} likes/s`);
      const erasure = await runErasureScenario({ env, settings, log: console.log });
      // A count off or something of the victim left fails the run; a slowdown is measured, not a failure.
      const [table, targets, passed] = [erasureTable(erasure), erasureTargets(erasure), erasureCorrect(erasure)];
      return { results: erasure, table, ratios: [], targets, passed };
    };
  },
};

const names = process.argv.slice(2);
const unknown = names.filter((n) => !SCENARIOS[n]);
if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; the scenarios: ${Object.keys(SCENARIOS).join(', ')}`);
const runs = (names.length > 0 ? names : Object.keys(SCENARIOS)).flatMap((name) => {
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
    const writes = [...world.expected.values()].reduce((n, e) => n + e.likes + e.favs, 0);
    const reactions = [...world.reactions.values()].reduce((n, r) => n + r.counts.reduce((a, b) => a + b, 0), 0);
    log(`seeded ${USERS} users, ${world.expected.size} posts, ${writes} likes and favs, ${reactions} reactions (flushed)`);
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
  const all = Object.entries(outcomes);
  const table = all.map(([, o]) => o.table).join('\n\n');
  console.log(`\n${table}\n`);
  const path = projectPath(`bench/results/${names.length > 0 ? names.join('+') : 'latest'}.json`);
  await writeResults(path, {
    machine: { ...machine, loadAverageEnd: loadAverage() },
    ...Object.fromEntries(all.map(([name, o]) => [name, o.results])),
    targets: Object.fromEntries(all.map(([name, o]) => [name, o.targets ?? targetsOf(o.ratios)])),
    ratios: Object.fromEntries(all.flatMap(([, o]) => o.ratios.map((r) => [r.label, Number(r.value.toFixed(3))]))),
    table,
  });
  log(`results written to ${path}`);
  if (all.some(([, o]) => !o.passed)) process.exitCode = 1;
} finally {
  const left = await cleanup();
  const [databases, keys] = [left.reduce((n, l) => n + l.databasesLeft, 0), left.reduce((n, l) => n + l.keysLeft, 0)];
  log(`cleaned up: ${databases} database(s), ${keys} key(s) left under ${envs.map((e) => e.redisKeyPrefix).join(' and ') || 'no prefix'}`);
  if (databases + keys > 0) process.exitCode = 1;
}
