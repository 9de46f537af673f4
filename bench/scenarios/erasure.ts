// Scenario "account erasure": its open-loop load, phases and latencies, its table and its target, "no slower than noise".
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { percentile } from '../lib/freshness.js';
import { changed, gql, likeBody, type RequestRecord, startOpenLoop } from '../lib/load.js';
import { cpuBetween, readCpu } from '../lib/procStats.js';
import { columns } from '../lib/report.js';
import { deploymentRedis, inBatches, waitUntilPersisted } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';
import { checkCounts, countsExact, type ErasureWorld, LOAD_USERS, seedErasureWorld, VICTIM, victimLeft } from './erasureWorld.js';

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
  const [sent, ok] = [records.length, latencies.length];
  return {
    ...{ sent, failures: sent - ok, unanswered, offeredPerS: sent / seconds, achievedPerS: ok / seconds },
    ...{ p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), maxMs: latencies.at(-1) ?? Number.NaN },
    ...{ worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN, failureSamples: failures.slice(0, 3) },
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
    const like = startOpenLoop({ url, perSecond: rates.likesPerS, next: nextLike, isOk: changed });
    const stop = () => Promise.all([feed.stop(), like.stop()]);
    // The load stops whatever happened, so no request outlives the phase.
    const value = await until(startedAt).catch((error: unknown) => stop().then(() => Promise.reject(error)));
    const sendingS = (Date.now() - startedAt) / 1000;
    const [f, l] = await stop();
    const stats = (s: typeof f) => streamStats(s.records, startedAt, sendingS, s.failures, s.unanswered);
    return { startedAt, value, records: { feed: f.records, like: l.records }, feed: stats(f), like: stats(l) };
  };
}

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
  const { config, keys, redis } = deploymentRedis(serverEnv);
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
    const seed = { ...world.seed, seconds: seedSeconds, persistedSeconds };
    const checks = { before, after, victim: await victimLeft(db, redis, keys) };
    const phases = [baselineBefore, during, baselineAfter] as const;
    return { settings, config: config.erasure, seed, phases, checks, method: 'docs/performance.md#account-erasure' };
  } finally {
    await deployment?.stop();
    redis.disconnect();
    await db.end();
  }
}

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

/** Noise is at least this share of the higher baseline (two baselines are a small sample). */
const MIN_NOISE = 0.1;
const THROUGHPUT_SLACK = 0.01;
const noise = (b: number, a: number) => Math.max(b, a) + Math.max(Math.abs(b - a), MIN_NOISE * Math.max(b, a));
const RULES = [
  ['p50 ms', 'p50Ms', noise, false],
  ['p99 ms', 'p99Ms', noise, false],
  ['failures', 'failures', Math.max, false],
  ['answered/s', 'achievedPerS', (b: number, a: number) => Math.min(b, a) * (1 - THROUGHPUT_SLACK), true],
] as const;

type Stream = ErasureResults['phases'][number]['feed'];
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const streamHeader = (name: string) => [`${name} ok/sent per s`, 'p50', 'p99', 'max', 'worst 10 s p99', 'failed'];
const rate = (s: Stream) => `${s.achievedPerS.toFixed(1)}/${s.offeredPerS.toFixed(1)}`;
const streamCells = (s: Stream) => [rate(s), ...[s.p50Ms, s.p99Ms, s.maxMs, s.worstWindowP99Ms].map(ms), String(s.failures)];
const sentCells = (s: Stream) => [String(s.sent), ...[s.p50Ms, s.p99Ms, s.maxMs].map(ms)];
const CORES = { api: 'API', worker: 'worker', redis: 'Redis', postgres: 'PostgreSQL', generator: 'generator', machine: 'machine' };
const coreCells = (cores: Record<string, number | null>) => Object.keys(CORES).map((k) => cores[k]?.toFixed(2) ?? '-');

const pairs = (counts: Record<string, number>) => Object.entries(counts).map(([k, v]) => `${k} ${v}`);
const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');
const targetLine = (t: ReturnType<typeof erasureTargets>[number]) =>
  `  ${t.label}: during ${ms(t.during)} vs baselines ${ms(t.before)} / ${ms(t.after)}, ${t.atLeast ? 'at least' : 'at most'} ${ms(t.limit)}: ${verdict(t.met)}`;
const exact = ({ compared, mismatches }: { compared: number; mismatches: unknown[] }, what: string) =>
  mismatches.length === 0
    ? `${compared} ${what} exact`
    : `${mismatches.length} WRONG of ${compared} ${what} (${JSON.stringify(mismatches.slice(0, 3))})`;

export function erasureTargets({ phases: [before, during, after] }: ErasureResults) {
  return (['feed', 'like'] as const).flatMap((stream) =>
    RULES.map(([what, field, limitOf, atLeast]) => {
      const [b, d, a] = [before[stream][field], during[stream][field], after[stream][field]];
      const limit = limitOf(b, a);
      return { label: `${stream} ${what}`, during: d, before: b, after: a, limit, atLeast, met: atLeast ? d >= limit : d <= limit };
    }),
  );
}

export function erasureCorrect({ checks: { after, victim } }: ErasureResults): boolean {
  return countsExact(after) && Object.values(victim.rows).every((n) => n === 0) && victim.redisKeys === 0 && victim.state === 'DONE';
}

export function erasureTable(results: ErasureResults): string {
  const { settings, config, seed, phases, checks } = results;
  const erasure = phases[1].erasure!;
  const main = columns(
    ['account erasure', 's', ...streamHeader('feed'), ...streamHeader('likes'), ...Object.values(CORES)],
    phases.map((x) => [x.name, x.windowS.toFixed(0), ...streamCells(x.feed), ...streamCells(x.like), ...coreCells(x.cores)]),
    (i) => i > 0,
  );
  const byPhase = columns(
    ['load by erasure phase', 's', 'feed sent', 'p50', 'p99', 'max', 'likes sent', 'p50', 'p99', 'max'],
    erasure.byPhase.map((x) => [x.phase, x.seconds.toFixed(1), ...sentCells(x.feed), ...sentCells(x.like)]),
    (i) => i > 0,
  );
  const targets = erasureTargets(results);
  return [
    main,
    `Latency in ms (request sent -> answer); ok/sent per s = right answers and requests per second of the phase; cores = CPU over the phase (PostgreSQL = every postgres process of the machine; generator = the bench process sending the load; machine = all cores busy, of ${os.cpus().length}). Load: ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s, open loop. The victim: ${seed.likes} likes, ${seed.favs} favourites and follows (${seed.victimFacts} facts) through the like path in ${seed.seconds.toFixed(0)} s; ${seed.otherLikes} likes by others on the same posts.`,
    `Erasure (ERASURE_BATCH_SIZE ${config.batchSize}, ERASURE_BUSY_PERCENT ${config.busyPercent}): ${erasure.durationS.toFixed(1)} s from eraseAccount to DONE; ${erasure.factsUndone} facts undone, ${erasure.factsPerS.toFixed(0)}/s over the whole erasure, ${Number.isFinite(erasure.factsPhasePerS) ? erasure.factsPhasePerS.toFixed(0) : '-'}/s in its facts phase; batches did: ${pairs(erasure.done).join(', ')}.`,
    '',
    byPhase,
    '',
    `Checks after: ${exact(checks.after.posts, 'liked posts: likes and favs (GraphQL posts(ids)) = recount of active facts in PostgreSQL')}; ${exact(checks.after.users, 'authors, followees and followers: followers, followings, likesReceived (GraphQL user) = recount')}; victim rows left ${JSON.stringify(checks.victim.rows)}, cached counter keys left ${checks.victim.redisKeys}, erasure state ${checks.victim.state}: ${erasureCorrect(results) ? 'ok' : 'NOT OK'}.`,
    '',
    `Target "no slower than noise" (p50 and p99 during the erasure <= the higher baseline + noise, noise = |before - after| or ${MIN_NOISE * 100} % of the higher baseline, whichever is larger; failures no more than a baseline's; answered/s within ${THROUGHPUT_SLACK * 100} % of the lower baseline):`,
    ...targets.map(targetLine),
    `Erasing a user with ${seed.likes} likes slows the feed and the like path by no more than noise: ${verdict(targets.every((t) => t.met))}`,
  ].join('\n');
}
