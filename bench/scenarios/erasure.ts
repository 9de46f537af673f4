// Scenario "account erasure" (docs/performance.md, "Account erasure"): the open-loop load before, during and after, table and target.
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
const ERASE = 'mutation Erase($i: EraseAccountInput!) { eraseAccount(input: $i) { userId state } }';
const PROGRESS = 'SELECT state, progress, extract(epoch FROM finished_at - requested_at)::float AS s FROM erasures WHERE user_id = $1';
const LIKED_BY_LOAD = 1000; // the newest liked posts: the load likes them, the feed shows them
const [MIN_PHASE_S, WARMUP_S, POLL_MS, ERASURE_TIMEOUT_MS] = [30, 15, 250, 60 * 60_000];
const [MIN_NOISE, THROUGHPUT_SLACK] = [0.1, 0.01]; // noise is at least 10 % of the higher baseline: two baselines are a small sample
const since = (t: number) => (Date.now() - t) / 1000;
const okLatencies = (rs: readonly RequestRecord[]) => rs.flatMap((r) => (r.ok ? [r.latencyMs] : [])).sort((a, b) => a - b);
type Erasure = Awaited<ReturnType<typeof eraseAndFollow>>;
type Options = { env: BenchEnv; settings: ReturnType<typeof erasureSettings>; log: (line: string) => void };
export type ErasureResults = Awaited<ReturnType<typeof runErasureScenario>>;

export const erasureSettings = () => ({
  likes: intSetting('BENCH_ERASURE_LIKES', 100_000, 2_000_000, LIKED_BY_LOAD),
  feedPerS: intSetting('BENCH_ERASURE_FEED_PER_S', 100, 10_000),
  likesPerS: intSetting('BENCH_ERASURE_LIKES_PER_S', 50, 10_000),
  baselineS: intSetting('BENCH_ERASURE_BASELINE_S', 60, 3600, 5),
});

function streamStats(records: readonly RequestRecord[], startedAt: number, seconds: number, failures: string[] = [], unanswered = 0) {
  const latencies = okLatencies(records);
  const windowOf = (r: RequestRecord) => Math.floor((r.sentAt - startedAt) / 10_000);
  const windows = [...new Set(records.map(windowOf))].map((w) => okLatencies(records.filter((r) => windowOf(r) === w)));
  const windowP99s = windows.filter((w) => w.length >= 100).map((w) => percentile(w, 99)); // with fewer answers p99 is the maximum
  const [sent, ok] = [records.length, latencies.length];
  return {
    ...{ sent, failures: sent - ok, unanswered, offeredPerS: sent / seconds, achievedPerS: ok / seconds },
    ...{ p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99), maxMs: latencies.at(-1) ?? Number.NaN },
    ...{ worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN, failureSamples: failures.slice(0, 3) },
  };
}

/** The load while `until` runs. The like counter goes on across runs, so every like is a new (user, post). */
function createLoad(url: string, world: ErasureWorld, { feedPerS, likesPerS }: Options['settings']) {
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
    const feed = startOpenLoop({ url, perSecond: feedPerS, next: () => ({ body: feedBody, token: tokenOf(feeds++) }), isOk: isFeed });
    const like = startOpenLoop({ url, perSecond: likesPerS, next: nextLike, isOk: changed });
    const stop = () => Promise.all([feed.stop(), like.stop()]);
    // The load stops whatever happened, so no request outlives the phase.
    const value = await until(startedAt).catch((error: unknown) => stop().then(() => Promise.reject(error)));
    const sendingS = since(startedAt);
    const [f, l] = await stop();
    const stats = (s: typeof f) => streamStats(s.records, startedAt, sendingS, s.failures, s.unanswered);
    return { startedAt, value, records: [f.records, l.records] as const, feed: stats(f), like: stats(l) };
  };
}

async function eraseAndFollow(url: string, token: string | undefined, db: pg.Pool, startedAt: number, log: Options['log']) {
  const { data } = await gql(url, ERASE, { i: { confirm: String(VICTIM) } }, token);
  if (data.eraseAccount.state !== 'ERASING') throw new Error(`eraseAccount answered ${data.eraseAccount.state}`);
  const timeline: { atS: number; phase: string; done: Record<string, number> }[] = [];
  for (const deadline = Date.now() + ERASURE_TIMEOUT_MS; Date.now() < deadline; await sleep(POLL_MS)) {
    const row = (await db.query(PROGRESS, [VICTIM])).rows[0];
    if (!row) continue;
    const done = row.progress.done ?? {};
    const phase = row.state === 'DONE' ? 'done' : (row.progress.phase ?? 'posts');
    timeline.push({ atS: since(startedAt), phase, done });
    if (timeline.length % 60 === 0) log(`    erasure: ${phase}, ${JSON.stringify(done)}`);
    const factsUndone: number = done.facts ?? 0;
    if (phase === 'done') return { durationS: row.s as number, factsUndone, factsPerS: factsUndone / row.s, done, timeline };
  }
  throw new Error(`the erasure was not DONE within ${ERASURE_TIMEOUT_MS / 60_000} minutes`);
}

function withByPhase(erasure: Erasure, startedAt: number, [feedSent, likesSent]: readonly [RequestRecord[], RequestRecord[]]) {
  const { timeline } = erasure;
  const seconds = new Map<string, number>();
  for (const [i, t] of timeline.entries()) {
    seconds.set(t.phase, (seconds.get(t.phase) ?? 0) + (timeline[i + 1] ?? t).atS - (i === 0 ? 0 : t.atS));
  }
  const phaseAt = (r: RequestRecord) => timeline.findLast((t, i) => i === 0 || t.atS <= (r.sentAt - startedAt) / 1000)!.phase;
  const phaseOf = new Map([...feedSent, ...likesSent].map((r) => [r, phaseAt(r)]));
  const inPhase = (sent: RequestRecord[], phase: string) => sent.filter((r) => phaseOf.get(r) === phase);
  const stats = (sent: RequestRecord[], phase: string, s: number) => streamStats(inPhase(sent, phase), startedAt, Math.max(s, 0.001));
  const byPhase = [...seconds]
    .map(([phase, s]) => ({ phase, seconds: s, feed: stats(feedSent, phase, s), like: stats(likesSent, phase, s) }))
    .filter((x) => x.feed.sent + x.like.sent > 0);
  const factsS = byPhase.find((x) => x.phase === 'facts')?.seconds ?? Number.NaN;
  return { ...erasure, factsPhasePerS: erasure.factsUndone / factsS, byPhase };
}

export async function runErasureScenario({ env, settings, log }: Options) {
  const serverEnv = tallyEnv(env);
  const { config, keys, redis } = deploymentRedis(serverEnv);
  const db = new pg.Pool({ connectionString: env.databaseUrl, max: 4 });
  // Every change persisted and flushed into the counters.
  const settle = () => waitUntilPersisted(redis, keys).then(() => sleep(2 * config.flushIntervalMs + 1000));
  let deployment: Awaited<ReturnType<typeof startDeployment>> | undefined;
  try {
    deployment = await startDeployment(serverEnv);
    const { url } = deployment.api;
    const seedStarted = Date.now();
    const world = await seedErasureWorld(serverEnv, settings.likes);
    const seedSeconds = since(seedStarted);
    await waitUntilPersisted(redis, keys);
    const seed = { ...world.seed, seconds: seedSeconds, persistedSeconds: since(seedStarted) - seedSeconds };
    const before = await checkCounts(url, db, world.likedPostIds, 30_000);
    if (!countsExact(before)) throw new Error(`the seeded counts are not exact: ${JSON.stringify(before).slice(0, 1000)}`);
    log(`  seeded in ${seedSeconds.toFixed(0)} s, persisted ${seed.persistedSeconds.toFixed(0)} s later: every count equals its recount`);
    await db.query('VACUUM (ANALYZE)'); // else autovacuum and analyze run through the first baseline
    const runLoad = createLoad(url, world, settings);
    // Every load user seen once (their first request writes their row), then the load warmed up.
    await inBatches(LOAD_USERS, 50, (id) => gql(url, FEED_QUERY, {}, world.tokens.get(id)));
    await runLoad(() => sleep(WARMUP_S * 1000));
    const pids = { ...deployment.pids, postgres: true };
    const phase = async (name: string, until: (startedAt: number) => Promise<Erasure | null>) => {
      await settle();
      const cpu = readCpu(pids);
      const { startedAt, value, records, feed, like } = await runLoad(until);
      const { windowS, ...used } = cpuBetween(cpu, readCpu(pids));
      const cores = Object.fromEntries(Object.entries(used).map(([k, s]) => [k, s === null ? null : s / windowS]));
      log(`  ${name}: ${windowS.toFixed(0)} s, feed p99 ${feed.p99Ms.toFixed(1)} ms, likes p99 ${like.p99Ms.toFixed(1)} ms`);
      return { name, windowS, feed, like, cores, erasure: value && withByPhase(value, startedAt, records) };
    };
    const baseline = (name: string, seconds: number) => phase(name, () => sleep(seconds * 1000).then(() => null));
    const baselineBefore = await baseline('baseline before', settings.baselineS);
    const during = await phase('during erasure', (at) => eraseAndFollow(url, world.tokens.get(VICTIM), db, at, log));
    const phases = [baselineBefore, during, await baseline('baseline after', Math.max(MIN_PHASE_S, during.erasure!.durationS))] as const;
    await settle();
    const checks = { before, after: await checkCounts(url, db, world.likedPostIds), victim: await victimLeft(db, redis, keys) };
    return { settings, config: config.erasure, seed, phases, checks, method: 'docs/performance.md#account-erasure' };
  } finally {
    await deployment?.stop();
    redis.disconnect();
    await db.end();
  }
}

const noise = (b: number, a: number) => Math.max(b, a) + Math.max(Math.abs(b - a), MIN_NOISE * Math.max(b, a));
const RULES = [
  ['p50 ms', 'p50Ms', noise, false],
  ['p99 ms', 'p99Ms', noise, false],
  ['failures', 'failures', Math.max, false],
  ['answered/s', 'achievedPerS', (b: number, a: number) => Math.min(b, a) * (1 - THROUGHPUT_SLACK), true],
] as const;

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

type Stream = ErasureResults['phases'][number]['feed'];
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const latency = (s: Stream) => [s.p50Ms, s.p99Ms, s.maxMs].map(ms);
const rate = (s: Stream) => `${s.achievedPerS.toFixed(1)}/${s.offeredPerS.toFixed(1)}`;
const streamCells = (s: Stream) => [rate(s), ...latency(s), ms(s.worstWindowP99Ms), String(s.failures)];
const streamHeader = (name: string) => [`${name} ok/sent per s`, 'p50', 'p99', 'max', 'worst 10 s p99', 'failed'];
const CORES = { api: 'API', worker: 'worker', redis: 'Redis', postgres: 'PostgreSQL', generator: 'generator', machine: 'machine' };
const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');
const exact = ({ compared, mismatches: m }: { compared: number; mismatches: unknown[] }) =>
  m.length === 0 ? `${compared} exact` : `${m.length} WRONG of ${compared} (${JSON.stringify(m.slice(0, 3))})`;

export function erasureTable(results: ErasureResults): string {
  const { settings, config, seed, phases, checks } = results;
  const erasure = phases[1].erasure!;
  const coreCells = (cores: Record<string, number | null>) => Object.keys(CORES).map((k) => cores[k]?.toFixed(2) ?? '-');
  const main = columns(
    ['account erasure', 's', ...streamHeader('feed'), ...streamHeader('likes'), ...Object.values(CORES)],
    phases.map((x) => [x.name, x.windowS.toFixed(0), ...streamCells(x.feed), ...streamCells(x.like), ...coreCells(x.cores)]),
    (i) => i > 0,
  );
  const sentCells = (s: Stream) => [String(s.sent), ...latency(s)];
  const byPhase = columns(
    ['load by erasure phase', 's', 'feed sent', 'p50', 'p99', 'max', 'likes sent', 'p50', 'p99', 'max'],
    erasure.byPhase.map((x) => [x.phase, x.seconds.toFixed(1), ...sentCells(x.feed), ...sentCells(x.like)]),
    (i) => i > 0,
  );
  const targets = erasureTargets(results);
  const limit = (t: (typeof targets)[number]) => `${t.atLeast ? 'at least' : 'at most'} ${ms(t.limit)}: ${verdict(t.met)}`;
  const batches = Object.entries(erasure.done).map(([k, v]) => `${k} ${v}`);
  return [
    main,
    `Load ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s; latency in ms, CPU in cores (machine: of ${os.cpus().length}).`,
    `Victim: ${seed.likes} likes, ${seed.favs} favourites and follows (${seed.victimFacts} facts), seeded in ${seed.seconds.toFixed(0)} s; ${seed.otherLikes} likes by others.`,
    `Erasure (ERASURE_BATCH_SIZE ${config.batchSize}, ERASURE_BUSY_PERCENT ${config.busyPercent}): ${erasure.durationS.toFixed(1)} s to DONE, ${erasure.factsUndone} facts undone, ${ms(erasure.factsPerS)}/s, ${ms(erasure.factsPhasePerS)}/s in its facts phase; batches did ${batches.join(', ')}.`,
    '',
    byPhase,
    '',
    `Checks after: posts' likes and favs ${exact(checks.after.posts)}; users' followers, followings, likesReceived ${exact(checks.after.users)}; victim rows left ${JSON.stringify(checks.victim.rows)}, counter keys left ${checks.victim.redisKeys}, state ${checks.victim.state}: ${erasureCorrect(results) ? 'ok' : 'NOT OK'}.`,
    `Target "no slower than noise" (noise at least ${MIN_NOISE * 100} % of the higher baseline; answered/s within ${THROUGHPUT_SLACK * 100} % of the lower):`,
    ...targets.map((t) => `  ${t.label}: during ${ms(t.during)} vs baselines ${ms(t.before)} / ${ms(t.after)}, ${limit(t)}`),
    `Erasing a user with ${seed.likes} likes slows the feed and the like path by no more than noise: ${verdict(targets.every((t) => t.met))}`,
  ].join('\n');
}
