// Scenario "account erasure" (docs/performance.md, "Account erasure"): its open-loop load, phases and latencies.
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createKeys } from '../../src/redis/keys.js';
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { percentile } from '../lib/freshness.js';
import { gql } from '../lib/httpPost.js';
import { likeBody } from '../lib/load.js';
import { type RequestRecord, startOpenLoop } from '../lib/openLoop.js';
import { cpuBetween, readCpu } from '../lib/procStats.js';
import { inBatches, waitUntilPersisted } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';
import { checkCounts, countsExact, type ErasureWorld, LOAD_USERS, seedErasureWorld, VICTIM, victimLeft } from './erasureWorld.js';

/** The README's feed query: a page with counts, the viewer's state and the authors. */
const FEED_QUERY =
  'query Feed { feed(first: 20) { edges { cursor node { id title createdAt author { id name } counts { likes favs asOf } myState { liked faved } } } pageInfo { hasNextPage endCursor } } }';
/** The newest liked posts the load likes (and the feed shows). */
const LIKED_BY_LOAD = 1000;
type LoadRun = { startedAt: number; records: Record<'feed' | 'like', RequestRecord[]> };

const answered = (records: readonly RequestRecord[]) => records.flatMap((r) => (r.ok ? [r.latencyMs] : [])).sort((a, b) => a - b);

function streamStats(records: readonly RequestRecord[], startedAt: number, seconds: number, failures: string[] = [], unanswered = 0) {
  const latencies = answered(records);
  const windowOf = (r: RequestRecord) => Math.floor((r.sentAt - startedAt) / 10_000);
  const windows = [...new Set(records.map(windowOf))].map((w) => answered(records.filter((r) => windowOf(r) === w)));
  // The worst 10 s window's p99, of windows with the 100 answers a p99 that is not just their maximum needs.
  const windowP99s = windows.filter((w) => w.length >= 100).map((w) => percentile(w, 99));
  return {
    sent: records.length,
    failures: records.length - latencies.length,
    unanswered,
    offeredPerS: records.length / seconds,
    achievedPerS: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN,
    failureSamples: failures.slice(0, 3),
  };
}

function createLoad(url: string, world: ErasureWorld, rates: { feedPerS: number; likesPerS: number }) {
  const posts = world.likedPostIds.slice(-LIKED_BY_LOAD);
  const [L, P] = [LOAD_USERS.length, posts.length];
  const tokenOf = (j: number) => world.tokens.get(LOAD_USERS[j % L]!)!;
  const feedBody = JSON.stringify({ query: FEED_QUERY });
  let [feeds, likes] = [0, 0];
  const nextLike = () => {
    const j = likes++;
    if (j >= L * P) throw new Error(`the load has used every one of its ${L * P} (user, post) pairs`);
    return { body: likeBody(posts[(Math.floor(j / L) * (L + 1) + (j % L)) % P]!), token: tokenOf(j) };
  };
  const isFeed = (body: string) => body.includes('"edges"') && !body.includes('"errors"');
  return async <T>(until: (startedAt: number) => Promise<T>) => {
    const startedAt = Date.now();
    const feed = startOpenLoop({ url, perSecond: rates.feedPerS, next: () => ({ body: feedBody, token: tokenOf(feeds++) }), isOk: isFeed });
    const like = startOpenLoop({ url, perSecond: rates.likesPerS, next: nextLike, isOk: (body) => body.includes('"changed":true') });
    const stop = () => Promise.all([feed.stop(), like.stop()]);
    // The load stops whatever happened, so no request outlives the phase.
    const value = await until(startedAt).catch((error: unknown) => stop().then(() => Promise.reject(error)));
    const sendingS = (Date.now() - startedAt) / 1000;
    const [f, l] = await stop();
    const stats = (s: typeof f) => streamStats(s.records, startedAt, sendingS, s.failures, s.unanswered);
    return { startedAt, value, records: { feed: f.records, like: l.records }, feed: stats(f), like: stats(l) };
  };
}

/** A phase's load by the erasure phase it was sent in: the phase of the timeline's latest reading then (or of its first). */
function byErasurePhase({ startedAt, records }: LoadRun, timeline: { atS: number; phase: string }[]) {
  const seconds = new Map<string, number>();
  for (const [i, t] of timeline.entries()) {
    seconds.set(t.phase, (seconds.get(t.phase) ?? 0) + (timeline[i + 1] ?? t).atS - (i === 0 ? 0 : t.atS));
  }
  const phaseAt = (r: RequestRecord) => timeline.findLast((t, i) => i === 0 || t.atS <= (r.sentAt - startedAt) / 1000)!.phase;
  const split = (stream: RequestRecord[]) => {
    const phases = stream.map(phaseAt);
    return (phase: string) => stream.filter((_, k) => phases[k] === phase);
  };
  const [feed, like] = [split(records.feed), split(records.like)];
  const stats = (sent: RequestRecord[], s: number) => streamStats(sent, startedAt, Math.max(s, 0.001));
  const phases = [...seconds].map(([phase, s]) => ({ phase, seconds: s, feed: stats(feed(phase), s), like: stats(like(phase), s) }));
  return phases.filter((x) => x.feed.sent + x.like.sent > 0);
}

const ERASE = 'mutation Erase($i: EraseAccountInput!) { eraseAccount(input: $i) { userId state } }';
const PROGRESS = 'SELECT state, progress, extract(epoch FROM finished_at - requested_at)::float AS s FROM erasures WHERE user_id = $1';
const [MIN_PHASE_S, WARMUP_S, POLL_MS, ERASURE_TIMEOUT_MS] = [30, 15, 250, 60 * 60_000];

export type ErasureResults = Awaited<ReturnType<typeof runErasureScenario>>;
type Options = { env: BenchEnv; settings: ReturnType<typeof erasureSettings>; log: (line: string) => void };

export const erasureSettings = () => ({
  likes: intSetting('BENCH_ERASURE_LIKES', 100_000, 2_000_000, LIKED_BY_LOAD),
  feedPerS: intSetting('BENCH_ERASURE_FEED_PER_S', 100, 10_000),
  likesPerS: intSetting('BENCH_ERASURE_LIKES_PER_S', 50, 10_000),
  baselineS: intSetting('BENCH_ERASURE_BASELINE_S', 60, 3600, 5),
});

export async function runErasureScenario({ env, settings, log }: Options) {
  const serverEnv = tallyEnv(env);
  // As the servers see it: startServer gives them this process's environment under theirs.
  const config = loadConfig({ ...process.env, ...serverEnv });
  const keys = createKeys(config.redisKeyPrefix, config.partitions);
  const redis = new Redis(serverEnv.REDIS_URL!);
  const db = new pg.Pool({ connectionString: env.databaseUrl, max: 4 });
  // Every change persisted and flushed into the counters.
  const settle = () => waitUntilPersisted(redis, keys).then(() => sleep(2 * config.flushIntervalMs + 1000));
  let deployment: Awaited<ReturnType<typeof startDeployment>> | undefined;
  try {
    deployment = await startDeployment(serverEnv);
    const { api } = deployment;
    const seedStarted = Date.now();
    const world = await seedErasureWorld(serverEnv, settings.likes);
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    await waitUntilPersisted(redis, keys);
    const persistedSeconds = (Date.now() - seedStarted) / 1000 - seedSeconds;
    const before = await checkCounts(api.url, db, world.likedPostIds, 30_000);
    if (!countsExact(before)) throw new Error(`the seeded counts are not exact: ${JSON.stringify(before).slice(0, 1000)}`);
    log(`  seeded in ${seedSeconds.toFixed(0)} s, persisted ${persistedSeconds.toFixed(0)} s later: every count equals its recount`);
    // Autovacuum and analyze would otherwise run through the first baseline and slow it.
    await db.query('VACUUM (ANALYZE)');
    const runLoad = createLoad(api.url, world, settings);
    // Every load user seen once (their first request writes their row), then the load warmed up.
    await inBatches(LOAD_USERS, 50, (id) => gql(api.url, FEED_QUERY, {}, world.tokens.get(id)));
    await runLoad(() => sleep(WARMUP_S * 1000));
    const pids = { ...deployment.pids, postgres: true };
    const phase = async (name: string, until: (startedAt: number) => Promise<Awaited<ReturnType<typeof followErasure>> | null>) => {
      await settle();
      const cpu = readCpu(pids);
      const run = await runLoad(until);
      const { windowS, ...used } = cpuBetween(cpu, readCpu(pids));
      const cores = Object.fromEntries(Object.entries(used).map(([k, s]) => [k, s === null ? null : s / windowS]));
      const byPhase = run.value ? byErasurePhase(run, run.value.timeline) : [];
      // The facts phase: from its first reading of the erasure's row to the next phase's (± POLL_MS).
      const factsS = byPhase.find((x) => x.phase === 'facts')?.seconds ?? Number.NaN;
      const erasure = run.value && { ...run.value, factsPhasePerS: run.value.factsUndone / factsS, byPhase };
      log(`  ${name}: ${windowS.toFixed(0)} s, feed p99 ${run.feed.p99Ms.toFixed(1)} ms, likes p99 ${run.like.p99Ms.toFixed(1)} ms`);
      return { name, windowS, feed: run.feed, like: run.like, cores, erasure };
    };
    const baseline = (name: string, seconds: number) => phase(name, () => sleep(seconds * 1000).then(() => null));
    const baselineBefore = await baseline('baseline before', settings.baselineS);
    const during = await phase('during erasure', async (startedAt) => {
      const { data } = await gql(api.url, ERASE, { i: { confirm: String(VICTIM) } }, world.tokens.get(VICTIM));
      if (data.eraseAccount.state !== 'ERASING') throw new Error(`eraseAccount answered ${data.eraseAccount.state}`);
      return followErasure(db, startedAt, log);
    });
    const baselineAfter = await baseline('baseline after', Math.max(MIN_PHASE_S, during.erasure!.durationS));
    await settle();
    const after = await checkCounts(api.url, db, world.likedPostIds);
    return {
      settings,
      config: config.erasure,
      seed: { ...world.seed, seconds: seedSeconds, persistedSeconds },
      phases: [baselineBefore, during, baselineAfter] as const,
      checks: { before, after, victim: await victimLeft(db, redis, keys) },
      method: 'docs/performance.md#account-erasure',
    };
  } finally {
    await deployment?.stop();
    redis.disconnect();
    await db.end();
  }
}

/** Reads the erasure's row every POLL_MS until it is DONE: its timeline, duration and rates. */
async function followErasure(db: pg.Pool, startedAt: number, log: (line: string) => void) {
  const timeline: { atS: number; phase: string; done: Record<string, number> }[] = [];
  for (const deadline = Date.now() + ERASURE_TIMEOUT_MS; Date.now() < deadline; await sleep(POLL_MS)) {
    const row = (await db.query(PROGRESS, [VICTIM])).rows[0];
    if (!row) continue;
    const done = row.progress.done ?? {};
    const phase = row.state === 'DONE' ? 'done' : (row.progress.phase ?? 'posts');
    timeline.push({ atS: (Date.now() - startedAt) / 1000, phase, done });
    if (timeline.length % 60 === 0) log(`    erasure: ${phase}, ${JSON.stringify(done)}`);
    const factsUndone: number = done.facts ?? 0;
    if (phase === 'done') return { durationS: row.s as number, factsUndone, factsPerS: factsUndone / row.s, done, timeline };
  }
  throw new Error(`the erasure was not DONE within ${ERASURE_TIMEOUT_MS / 60_000} minutes`);
}
