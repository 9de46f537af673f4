// Scenario "account erasure": does erasing a user with 100,000 likes slow the feed or the like
// path? One Tally API process (ROLE=api) and one worker (ROLE=worker: aggregator, flush, fact
// persister, erasure jobs), as deployed, on a fresh database and key prefix. The victim's
// likes go through the like path and are persisted (bench/scenarios/erasureSeed.ts). Then
// three phases under the same open-loop load (feed pages as logged-in viewers, and likes by
// other users on the posts the victim liked, each a new (user, post) pair):
//   1. baseline before: BENCH_ERASURE_BASELINE_S (default 60 s);
//   2. during erasure: eraseAccount with the victim's token when the phase starts; the phase
//      ends when the erasures table says DONE;
//   3. baseline after: as long as phase 2, at least 30 s (drift between 1 and 3 is the noise).
// Afterwards every liked post's counts (GraphQL) must equal a recount of the facts PostgreSQL
// holds, and nothing of the victim may be left. The seeded database is vacuumed and analyzed
// before phase 1, as autovacuum would have done in a steady deployment.
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createKeys } from '../../src/redis/keys.js';
import { type BenchEnv, tallyEnv } from '../lib/env.js';
import { percentile } from '../lib/freshness.js';
import { gql } from '../lib/load.js';
import { type RequestRecord, startOpenLoop } from '../lib/openLoop.js';
import { cpuBetween, localRedisPid, readCpu } from '../lib/procStats.js';
import { waitUntilPersisted } from '../lib/seed.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { type CountCheck, checkCounts, type VictimLeft, victimLeft } from './erasureCheck.js';
import { type ErasureWorld, seedErasureWorld, VICTIM } from './erasureSeed.js';

/** The README's feed query: a page with counts, the viewer's state and the authors. */
export const FEED_QUERY =
  'query Feed { feed(first: 20) { edges { cursor node { id title createdAt author { id name } counts { likes favs asOf } myState { liked faved } } } pageInfo { hasNextPage endCursor } } }';
const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const ERASE = 'mutation Erase($i: EraseAccountInput!) { eraseAccount(input: $i) { userId state } }';
/** The newest liked posts the load likes (and the feed shows): each like a new (user, post) pair. */
const LIKED_BY_LOAD = 1000;
const MIN_PHASE_S = 30;
const WARMUP_S = 15;
/** Latency windows for the "worst 10 s" figure. */
const WINDOW_MS = 10_000;
/** How often the erasure's row is read during phase 2 (its progress timeline). */
const POLL_MS = 250;
const ERASURE_TIMEOUT_MS = 60 * 60_000;

export interface ErasureSettings {
  /** Distinct posts the victim likes. */
  likes: number;
  feedPerS: number;
  likesPerS: number;
  /** Length of the first baseline (the second lasts as long as the erasure, at least 30 s). */
  baselineS: number;
}

export function erasureSettings(env: NodeJS.ProcessEnv = process.env): ErasureSettings {
  const int = (name: string, fallback: number, min: number, max: number) => {
    const raw = env[name];
    const n = raw === undefined || raw === '' ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
    return n;
  };
  return {
    // At least LIKED_BY_LOAD: the load's likes go to the victim's newest liked posts.
    likes: int('BENCH_ERASURE_LIKES', 100_000, LIKED_BY_LOAD, 2_000_000),
    feedPerS: int('BENCH_ERASURE_FEED_PER_S', 100, 1, 10_000),
    likesPerS: int('BENCH_ERASURE_LIKES_PER_S', 50, 1, 10_000),
    baselineS: int('BENCH_ERASURE_BASELINE_S', 60, 5, 3600),
  };
}

export interface StreamStats {
  sent: number;
  ok: number;
  failures: number;
  unanswered: number;
  offeredPerS: number;
  achievedPerS: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** The highest p99 of the phase's 10 s windows (by send time). */
  worstWindowP99Ms: number;
  /** A few failure messages. */
  failureSamples: string[];
}

export interface Cores {
  api: number;
  worker: number;
  redis: number | null;
  postgres: number;
  /** This process: the load generator. */
  generator: number;
  machine: number;
  steal: number;
}

/** How far the erasure was at an instant (read from its row during phase 2). */
export interface TimelinePoint {
  /** Seconds since phase 2 started. */
  atS: number;
  phase: string;
  done: Record<string, number>;
}

export interface ErasureRun {
  durationS: number;
  factsUndone: number;
  factsPerS: number;
  /** Facts undone per second of the facts phase alone (from the timeline). */
  factsPhasePerS: number;
  done: Record<string, number>;
  timeline: TimelinePoint[];
  /** Latency of the load by the erasure phase it was sent in. */
  byPhase: { phase: string; seconds: number; feed: StreamStats; like: StreamStats }[];
}

export interface ErasurePhaseResult {
  name: 'baseline before' | 'during erasure' | 'baseline after';
  windowS: number;
  feed: StreamStats;
  like: StreamStats;
  cores: Cores;
  erasure: ErasureRun | null;
}

export interface ErasureResults {
  settings: ErasureSettings;
  config: { batchSize: number; busyPercent: number };
  seed: { likes: number; favs: number; victimFacts: number; otherLikes: number; seconds: number; persistedSeconds: number };
  phases: ErasurePhaseResult[];
  checks: { before: { posts: CountCheck; users: CountCheck }; after: { posts: CountCheck; users: CountCheck }; victim: VictimLeft };
  method: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function streamStats(
  records: readonly RequestRecord[],
  startedAt: number,
  sendingS: number,
  failureSamples: string[],
  unanswered: number,
): StreamStats {
  const latencies = records.filter((r) => r.ok).map((r) => r.latencyMs);
  latencies.sort((a, b) => a - b);
  const windows = new Map<number, number[]>();
  for (const r of records) {
    if (!r.ok) continue;
    const w = Math.floor((r.sentAt - startedAt) / WINDOW_MS);
    windows.set(w, [...(windows.get(w) ?? []), r.latencyMs]);
  }
  // A window needs 100 answers for a p99 that is not just its maximum.
  const windowP99s = [...windows.values()]
    .filter((w) => w.length >= 100)
    .map((w) =>
      percentile(
        w.sort((a, b) => a - b),
        99,
      ),
    );
  return {
    sent: records.length,
    ok: latencies.length,
    failures: records.length - latencies.length,
    unanswered,
    offeredPerS: records.length / sendingS,
    achievedPerS: latencies.length / sendingS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN,
    failureSamples: failureSamples.slice(0, 3),
  };
}

export async function runErasureScenario(opts: {
  env: BenchEnv;
  settings: ErasureSettings;
  log: (line: string) => void;
}): Promise<ErasureResults> {
  const { settings, log } = opts;
  const serverEnv = tallyEnv(opts.env);
  // As the servers see it: startServer gives them this process's environment under theirs.
  const config = loadConfig({ ...process.env, ...serverEnv });
  const keys = createKeys(config.redisKeyPrefix, config.partitions);
  const redis = new Redis(serverEnv.REDIS_URL!);
  const db = new pg.Pool({ connectionString: opts.env.databaseUrl, max: 4 });
  const servers: ServerHandle[] = [];
  try {
    const worker = await startServer('tally', { ...serverEnv, ROLE: 'worker' });
    servers.push(worker);
    const api = await startServer('tally', { ...serverEnv, ROLE: 'api' });
    servers.push(api);
    const redisPid = await localRedisPid(serverEnv.REDIS_URL!);

    const seedStarted = Date.now();
    const world = await seedErasureWorld(serverEnv, settings.likes, log);
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    await waitUntilPersisted(redis, keys);
    const persistedSeconds = (Date.now() - seedStarted) / 1000 - seedSeconds;
    const { rows } = await db.query<{ n: string }>('SELECT count(*) AS n FROM relation_facts WHERE user_id = $1 AND active', [VICTIM]);
    if (Number(rows[0]!.n) !== world.victimFacts) {
      throw new Error(`PostgreSQL holds ${rows[0]!.n} active facts of the victim, ${world.victimFacts} were written`);
    }
    const userIds = [...world.authors, ...world.followers];
    const before = await checkCounts(api.url, db, world.likedPostIds, userIds, 30_000);
    if (before.posts.mismatches.length + before.users.mismatches.length > 0) {
      throw new Error(
        `the seeded counts are not exact: ${JSON.stringify([...before.posts.mismatches, ...before.users.mismatches].slice(0, 5))}`,
      );
    }
    log(
      `  seeded in ${seedSeconds.toFixed(0)} s, persisted ${persistedSeconds.toFixed(0)} s later: the victim has ${world.victimFacts} active facts in PostgreSQL; every count equals its recount`,
    );

    // A database that just took a bulk seed is not in its steady state: autovacuum and analyze
    // would run through the baseline before and make it slower than the one after. Do them now.
    const vacuumStarted = Date.now();
    await db.query('VACUUM (ANALYZE)');
    log(`  vacuumed and analyzed the seeded database in ${((Date.now() - vacuumStarted) / 1000).toFixed(0)} s`);

    const load = createLoad(api.url, world, settings);
    // Every load user seen once (their first request writes their row), then the load warmed up.
    for (let i = 0; i < world.loadUsers.length; i += 50) {
      await Promise.all(world.loadUsers.slice(i, i + 50).map((id) => gql(api.url, FEED_QUERY, {}, world.tokens.get(id))));
    }
    await runPhaseLoad(load, () => sleep(WARMUP_S * 1000));

    const pids = { api: api.pid, worker: worker.pid, redis: redisPid, postgres: true };
    const phase = async (
      name: ErasurePhaseResult['name'],
      until: (startedAt: number) => Promise<ErasureRun | null>,
    ): Promise<ErasurePhaseResult> => {
      await waitUntilPersisted(redis, keys);
      await sleep(2 * config.flushIntervalMs + 1000);
      const a = readCpu(pids);
      const run = await runPhaseLoad(load, until);
      const { windowS, ...used } = cpuBetween(a, readCpu(pids));
      const perS = (x: number | null) => (x === null ? null : x / windowS);
      const cores: Cores = {
        api: used.api / windowS,
        worker: used.worker / windowS,
        redis: perS(used.redis),
        postgres: used.postgres! / windowS,
        generator: used.generator / windowS,
        machine: used.machine / windowS,
        steal: used.steal / windowS,
      };
      const result: ErasurePhaseResult = { name, windowS, feed: run.feed, like: run.like, cores, erasure: run.extra };
      if (run.extra) run.extra.byPhase = byErasurePhase(run.records, run.extra.timeline);
      log(
        `  ${name}: ${run.sendingS.toFixed(0)} s; feed p50 ${result.feed.p50Ms.toFixed(1)} ms, p99 ${result.feed.p99Ms.toFixed(1)} ms, ${result.feed.failures} failed; likes p50 ${result.like.p50Ms.toFixed(1)} ms, p99 ${result.like.p99Ms.toFixed(1)} ms, ${result.like.failures} failed; cores: API ${cores.api.toFixed(2)}, worker ${cores.worker.toFixed(2)}, Redis ${cores.redis?.toFixed(2) ?? '-'}, PostgreSQL ${cores.postgres.toFixed(2)}, load generator ${cores.generator.toFixed(2)}, machine ${cores.machine.toFixed(2)}`,
      );
      return result;
    };

    const phases: ErasurePhaseResult[] = [];
    phases.push(await phase('baseline before', () => sleep(settings.baselineS * 1000).then(() => null)));
    const victimToken = world.tokens.get(VICTIM)!;
    phases.push(
      await phase('during erasure', async (startedAt) => {
        const { data } = await gql<{ eraseAccount: { state: string } }>(api.url, ERASE, { i: { confirm: String(VICTIM) } }, victimToken);
        if (data.eraseAccount.state !== 'ERASING') throw new Error(`eraseAccount answered ${data.eraseAccount.state}`);
        return followErasure(db, startedAt, log);
      }),
    );
    const erasure = phases[1]!.erasure!;
    phases.push(await phase('baseline after', () => sleep(Math.max(MIN_PHASE_S, erasure.durationS) * 1000).then(() => null)));

    // Every change of the load persisted and flushed, then compared.
    await waitUntilPersisted(redis, keys);
    await sleep(2 * config.flushIntervalMs + 1000);
    const after = await checkCounts(api.url, db, world.likedPostIds, userIds);
    const victim = await victimLeft(db, redis, keys);
    return {
      settings,
      config: config.erasure,
      seed: {
        likes: world.likedPostIds.length,
        favs: world.favedPostIds.length,
        victimFacts: world.victimFacts,
        otherLikes: world.otherLikes,
        seconds: seedSeconds,
        persistedSeconds,
      },
      phases,
      checks: { before, after, victim },
      method: 'docs/performance.md#account-erasure',
    };
  } finally {
    for (const server of servers.reverse()) await server.stop();
    redis.disconnect();
    await db.end();
  }
}

interface Load {
  url: string;
  feedPerS: number;
  likesPerS: number;
  nextFeed: () => { body: string; token: string };
  nextLike: () => { body: string; token: string };
}

/** Every request of a phase, for latency by erasure phase. */
interface PhaseRecords {
  startedAt: number;
  feed: RequestRecord[];
  like: RequestRecord[];
}

/**
 * The load's requests. The j-th like is user j % L on post (q(L + 1) + j % L) % P of the newest
 * P liked posts, q = ⌊j / L⌋: a (user, post) pair never liked before for j < L × P, since
 * L + 1 and P are coprime (L = P = 1000), so every like changes a count.
 */
function createLoad(url: string, world: ErasureWorld, settings: ErasureSettings): Load {
  const users = world.loadUsers;
  const posts = world.likedPostIds.slice(-LIKED_BY_LOAD);
  const L = users.length;
  const P = posts.length;
  const feedBody = JSON.stringify({ query: FEED_QUERY });
  let feeds = 0;
  let likes = 0;
  return {
    url,
    feedPerS: settings.feedPerS,
    likesPerS: settings.likesPerS,
    nextFeed: () => ({ body: feedBody, token: world.tokens.get(users[feeds++ % L]!)! }),
    nextLike: () => {
      const j = likes++;
      if (j >= L * P) throw new Error(`the load has used every one of its ${L * P} (user, post) pairs`);
      const q = Math.floor(j / L);
      const postId = posts[(q * (L + 1) + (j % L)) % P]!;
      return {
        body: JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), kind: 'LIKE', active: true } } }),
        token: world.tokens.get(users[j % L]!)!,
      };
    },
  };
}

/** Runs the load until `until` resolves; the answers are waited for, then summed up. */
async function runPhaseLoad<T>(load: Load, until: (startedAt: number) => Promise<T>) {
  const startedAt = Date.now();
  const feed = startOpenLoop({
    url: load.url,
    perSecond: load.feedPerS,
    next: load.nextFeed,
    isOk: (body) => body.includes('"edges"') && !body.includes('"errors"'),
  });
  const like = startOpenLoop({
    url: load.url,
    perSecond: load.likesPerS,
    next: load.nextLike,
    isOk: (body) => body.includes('"changed":true'),
  });
  // The load stops whatever happened, so no request outlives the phase.
  const outcome = await until(startedAt).then(
    (value) => ({ value, error: null }),
    (error: unknown) => ({ value: null, error }),
  );
  const stopped = Date.now();
  const [f, l] = await Promise.all([feed.stop(), like.stop()]);
  if (outcome.error !== null) throw outcome.error;
  const extra = outcome.value as T;
  const sendingS = (stopped - startedAt) / 1000;
  return {
    sendingS,
    records: { startedAt, feed: f.records, like: l.records },
    extra,
    feed: streamStats(f.records, startedAt, sendingS, f.failures, f.unanswered),
    like: streamStats(l.records, startedAt, sendingS, l.failures, l.unanswered),
  };
}

/** Reads the erasure's row until it is DONE: its timeline, duration and rate. */
async function followErasure(db: pg.Pool, startedAt: number, log: (line: string) => void): Promise<ErasureRun> {
  const timeline: TimelinePoint[] = [];
  const deadline = Date.now() + ERASURE_TIMEOUT_MS;
  let lastLog = Date.now();
  for (;;) {
    const { rows } = await db.query<{
      state: string;
      progress: { phase?: string; done?: Record<string, number> };
      requested_at: Date;
      finished_at: Date | null;
    }>('SELECT state, progress, requested_at, finished_at FROM erasures WHERE user_id = $1', [VICTIM]);
    const row = rows[0];
    if (row) {
      const phase = row.state === 'DONE' ? 'done' : (row.progress.phase ?? 'posts');
      timeline.push({ atS: (Date.now() - startedAt) / 1000, phase, done: row.progress.done ?? {} });
      if (Date.now() - lastLog >= 15_000) {
        lastLog = Date.now();
        log(`    erasure: ${phase}, ${JSON.stringify(row.progress.done ?? {})}`);
      }
      if (row.state === 'DONE') {
        const durationS = (row.finished_at!.getTime() - row.requested_at.getTime()) / 1000;
        const done = row.progress.done ?? {};
        const factsUndone = done.facts ?? 0;
        // The facts phase: from the first reading in it to the first reading after its last (± POLL_MS).
        const first = timeline.findIndex((t) => t.phase === 'facts');
        const last = timeline.findLastIndex((t) => t.phase === 'facts');
        const factsSeconds = first >= 0 && timeline[last + 1] ? timeline[last + 1]!.atS - timeline[first]!.atS : Number.NaN;
        return {
          durationS,
          factsUndone,
          factsPerS: factsUndone / durationS,
          factsPhasePerS: factsUndone / factsSeconds,
          done,
          timeline,
          byPhase: [],
        };
      }
    }
    if (Date.now() > deadline) throw new Error(`the erasure was not DONE within ${ERASURE_TIMEOUT_MS / 60_000} minutes`);
    await sleep(POLL_MS);
  }
}

/** The phase 2 load's latencies by the erasure phase each request was sent in (timeline order). */
function byErasurePhase(records: PhaseRecords, timeline: readonly TimelinePoint[]): ErasureRun['byPhase'] {
  // Consecutive stretches of one phase, merged by name (a second round of facts adds to the first).
  const stretches: { phase: string; fromS: number; toS: number }[] = [];
  timeline.forEach((t, i) => {
    const toS = timeline[i + 1]?.atS ?? Number.POSITIVE_INFINITY;
    const last = stretches.at(-1);
    if (last && last.phase === t.phase) last.toS = toS;
    else stretches.push({ phase: t.phase, fromS: i === 0 ? 0 : t.atS, toS });
  });
  const phaseAt = (sentAt: number) => {
    const s = (sentAt - records.startedAt) / 1000;
    return stretches.find((x) => s >= x.fromS && s < x.toS)?.phase ?? 'done';
  };
  const names = [...new Set(stretches.map((s) => s.phase))];
  return names
    .map((phase) => {
      const feed = records.feed.filter((r) => phaseAt(r.sentAt) === phase);
      const like = records.like.filter((r) => phaseAt(r.sentAt) === phase);
      const seconds = stretches.filter((s) => s.phase === phase).reduce((n, s) => n + Math.min(s.toS, timeline.at(-1)!.atS) - s.fromS, 0);
      return {
        phase,
        seconds,
        feed: streamStats(feed, records.startedAt, Math.max(seconds, 0.001), [], 0),
        like: streamStats(like, records.startedAt, Math.max(seconds, 0.001), [], 0),
      };
    })
    .filter((x) => x.feed.sent + x.like.sent > 0);
}
