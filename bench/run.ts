// `npm run bench`: sets up its own PostgreSQL database and Redis key prefix, seeds a world
// through Tally's write path, runs the scenarios (each server under test in a child process,
// load generated here), prints one comparison table, writes bench/results/latest.json, and
// removes everything it created.
//
// Env: BENCH_DURATION_S (timed run per feed case, default 6), BENCH_LIKES (distinct users
// liking the one hot post, per server, default 20000), TEST_DATABASE_URL / TEST_REDIS_URL (admin database and Redis, as for tests),
// BENCH_NODE_BINARIES (the Node binaries Tally's feed is compared on, default Node 20 and 24; see bench/lib/nodeBinaries.ts),
// BENCH_LIVE_* (the live counts scenario, bench/scenarios/live.ts, on a database and key prefix of its own),
// BENCH_ERASURE_* (the account erasure scenario, bench/scenarios/erasure.ts, likewise, last).
import os from 'node:os';
import { projectPath } from '../src/paths.js';
import { type BenchEnv, createBenchEnv, tallyEnv } from './lib/env.js';
import { machineInfo } from './lib/machine.js';
import { nodeBinaries } from './lib/nodeBinaries.js';
import { formatTable, targetsOf, writeResults } from './lib/report.js';
import { FEED_POSTS, LIKE_TARGET_POSTS, seedWorld, USERS } from './lib/seed.js';
import { erasureSettings, runErasureScenario } from './scenarios/erasure.js';
import { erasureCorrect, erasureTable, erasureTargets } from './scenarios/erasureReport.js';
import { FEED_CONNECTIONS, FEED_ROUNDS, FEED_SERVERS, feedRatios, feedRows, PAGES, runFeedScenario } from './scenarios/feed.js';
import { likeRatios, likeRows, runLikeScenario } from './scenarios/likes.js';
import { liveSettings, runLiveScenario } from './scenarios/live.js';
import { liveRatios, liveTable } from './scenarios/liveReport.js';
import { memoryDb, memoryRatios, memoryTable, runMemoryScenario } from './scenarios/memory.js';
import { RUNTIME_PAGES, type RuntimeRun, runRuntimeScenario, runtimeRatios, runtimeRows } from './scenarios/runtimes.js';

const durationS = Number(process.env.BENCH_DURATION_S ?? 6);
const warmupS = Math.min(2, durationS);
const likes = Number(process.env.BENCH_LIKES ?? 20_000);
if (!(durationS > 0) || !(likes > 0)) throw new Error('BENCH_DURATION_S and BENCH_LIKES must be positive numbers');
const live = liveSettings();
const erasureOptions = erasureSettings();

// Found (or installed) before anything is created: a missing one costs seconds, not a run.
const binaries = nodeBinaries();

const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;

const env = await createBenchEnv();
// Every database and key prefix the run created (the live scenario gets its own).
const envs: BenchEnv[] = [env];
let cleaned: Promise<{ databasesLeft: number; keysLeft: number }> | null = null;
const cleanup = () =>
  (cleaned ??= Promise.all(envs.map((e) => e.cleanup())).then((lefts) => ({
    databasesLeft: lefts.reduce((n, l) => n + l.databasesLeft, 0),
    keysLeft: lefts.reduce((n, l) => n + l.keysLeft, 0),
  })));
// Interrupted: the children exit on their own when their IPC channel closes; drop the data here.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}

try {
  console.log(`bench: database ${env.databaseName}, Redis prefix ${env.redisKeyPrefix}`);
  const serverEnv = tallyEnv(env);
  const machine = await machineInfo(env.databaseUrl, env.redisUrl);

  const world = await seedWorld(serverEnv);
  console.log(
    `[${elapsed()}] seeded ${USERS} users, ${world.expected.size} posts, ${[...world.expected.values()].reduce((n, e) => n + e.likes + e.favs, 0)} likes and favs (flushed)`,
  );

  console.log(
    `[${elapsed()}] feed: pages of ${PAGES.join(' and ')} posts, ${FEED_SERVERS.length} servers, ${FEED_CONNECTIONS} connections, ${warmupS} s warm-up + ${durationS} s each in ${FEED_ROUNDS} round-robin rounds`,
  );
  const feed = await runFeedScenario({ serverEnv, world, durationS, warmupS });
  let runtimes: RuntimeRun[] = [];
  if (binaries.length > 0) {
    console.log(
      `[${elapsed()}] runtimes: Tally's feed, pages of ${RUNTIME_PAGES.join(' and ')}, on ${binaries.map((b) => `Node ${b.version} (${b.path})`).join(' vs ')}, ${warmupS} s warm-up + ${durationS} s each in ${FEED_ROUNDS} round-robin rounds`,
    );
    runtimes = await runRuntimeScenario({ serverEnv, world, binaries, durationS, warmupS });
  }
  console.log(`[${elapsed()}] hot post: ${likes} distinct users like one post, per server`);
  const like = await runLikeScenario({ serverEnv, world, likes });
  console.log(`[${elapsed()}] memory: Redis bytes per relation and per counted entity (no servers)`);
  const memory = await runMemoryScenario({ redisUrl: env.redisUrl, db: memoryDb(), log: console.log });
  const liveEnv = await createBenchEnv();
  envs.push(liveEnv);
  console.log(
    `[${elapsed()}] live counts: ${live.sockets} WebSocket subscribers vs ${live.pollers} HTTP pollers, ${live.likesPerS} likes/s for ${live.durationS} s per phase (database ${liveEnv.databaseName}, Redis prefix ${liveEnv.redisKeyPrefix})`,
  );
  const liveCounts = await runLiveScenario({ env: liveEnv, settings: live, log: console.log });
  const erasureEnv = await createBenchEnv();
  envs.push(erasureEnv);
  console.log(
    `[${elapsed()}] account erasure: a victim with ${erasureOptions.likes} likes, erased under ${erasureOptions.feedPerS} feed pages/s + ${erasureOptions.likesPerS} likes/s (database ${erasureEnv.databaseName}, Redis prefix ${erasureEnv.redisKeyPrefix})`,
  );
  const erasure = await runErasureScenario({ env: erasureEnv, settings: erasureOptions, log: console.log });

  const feedRatioList = feedRatios(feed.runs, feed.roundTripsByPage);
  const likeRatioList = likeRatios(like.runs);
  const memoryRatioList = memoryRatios(memory);
  const liveRatioList = liveRatios(liveCounts);
  const ratios = [...feedRatioList, ...likeRatioList];
  const runtimeRatioList = runtimes.length > 0 ? runtimeRatios(runtimes) : [];
  const table = [
    formatTable([...feedRows(feed.runs), ...likeRows(like.runs, like.likes)], ratios),
    memoryTable(memory),
    ...(runtimes.length > 0 ? [formatTable(runtimeRows(runtimes), runtimeRatioList)] : []),
    liveTable(liveCounts),
    erasureTable(erasure),
  ].join('\n\n');
  console.log(`\n${table}\n`);

  const path = projectPath('bench/results/latest.json');
  await writeResults(path, {
    machine: { ...machine, loadAverageEnd: os.loadavg().map((x) => Number(x.toFixed(2))) },
    settings: {
      durationS,
      warmupS,
      feedPages: PAGES,
      feedServers: FEED_SERVERS,
      feedConnections: FEED_CONNECTIONS,
      feedRounds: FEED_ROUNDS,
      nodeBinaries: binaries,
      likeConnections: like.connections,
      likes: like.likes,
      users: USERS,
      feedPosts: FEED_POSTS,
      likeTargetPosts: LIKE_TARGET_POSTS,
    },
    roundTrips: 'docs/performance.md#the-bench',
    feed,
    feedTargets: targetsOf(feedRatioList),
    likes: { hotPostId: like.hotPostId, users: like.likes, freshnessMethod: like.freshnessMethod, runs: like.runs },
    likeTargets: targetsOf(likeRatioList),
    memory,
    memoryTargets: targetsOf(memoryRatioList),
    runtimes,
    live: liveCounts,
    liveTargets: targetsOf(liveRatioList),
    erasure,
    erasureTargets: erasureTargets(erasure),
    ratios: Object.fromEntries(
      [...ratios, ...memoryRatioList, ...runtimeRatioList, ...liveRatioList].map((r) => [r.label, Number(r.value.toFixed(3))]),
    ),
    table,
  });
  console.log(`[${elapsed()}] results written to ${path}`);
  if (!like.runs.every((r) => r.exact) || [...feed.runs, ...like.runs, ...runtimes].some((r) => r.load.failures > 0)) process.exitCode = 1;
  // Live counts: counts off, sockets lost or unexpected messages fail the run; an overloaded API's failed likes are measured.
  if (liveCounts.phases.some((x) => x.problems.length > 0 || !x.exact)) process.exitCode = 1;
  // Account erasure: a count off or something of the victim left fails the run; a slowdown is measured.
  if (!erasureCorrect(erasure)) process.exitCode = 1;
} finally {
  const left = await cleanup();
  console.log(
    `[${elapsed()}] cleaned up: ${left.databasesLeft} database(s), ${left.keysLeft} key(s) left under ${envs.map((e) => e.redisKeyPrefix).join(' and ')}`,
  );
  if (left.databasesLeft + left.keysLeft > 0) process.exitCode = 1;
}
