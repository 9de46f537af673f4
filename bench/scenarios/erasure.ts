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
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { gql } from '../lib/load.js';
import { cpuBetween, localRedisPid, readCpu } from '../lib/procStats.js';
import { waitUntilPersisted } from '../lib/seed.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { checkCounts, victimLeft } from './erasureCheck.js';
import { byErasurePhase, createLoad, FEED_QUERY, LIKED_BY_LOAD, runPhaseLoad } from './erasureLoad.js';
import { seedErasureWorld, VICTIM } from './erasureSeed.js';

const ERASE = 'mutation Erase($i: EraseAccountInput!) { eraseAccount(input: $i) { userId state } }';
const MIN_PHASE_S = 30;
const WARMUP_S = 15;
/** How often the erasure's row is read during phase 2 (its progress timeline). */
const POLL_MS = 250;
const ERASURE_TIMEOUT_MS = 60 * 60_000;

export type ErasureSettings = ReturnType<typeof erasureSettings>;
export type ErasureResults = Awaited<ReturnType<typeof runErasureScenario>>;
export type ErasurePhaseResult = ErasureResults['phases'][number];
type ErasureRun = Awaited<ReturnType<typeof followErasure>>;

export function erasureSettings(env: NodeJS.ProcessEnv = process.env) {
  const int = (name: string, fallback: number, min: number, max: number) => intSetting(env, name, fallback, min, max);
  return {
    /** Distinct posts the victim likes (at least the LIKED_BY_LOAD the load's likes go to). */
    likes: int('BENCH_ERASURE_LIKES', 100_000, LIKED_BY_LOAD, 2_000_000),
    feedPerS: int('BENCH_ERASURE_FEED_PER_S', 100, 1, 10_000),
    likesPerS: int('BENCH_ERASURE_LIKES_PER_S', 50, 1, 10_000),
    /** Length of the first baseline (the second lasts as long as the erasure, at least 30 s). */
    baselineS: int('BENCH_ERASURE_BASELINE_S', 60, 5, 3600),
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runErasureScenario(opts: { env: BenchEnv; settings: ErasureSettings; log: (line: string) => void }) {
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
      name: 'baseline before' | 'during erasure' | 'baseline after',
      until: (startedAt: number) => Promise<ErasureRun | null>,
    ) => {
      await waitUntilPersisted(redis, keys);
      await sleep(2 * config.flushIntervalMs + 1000);
      const a = readCpu(pids);
      const run = await runPhaseLoad(load, until);
      const { windowS, ...used } = cpuBetween(a, readCpu(pids));
      const perS = (x: number | null) => (x === null ? null : x / windowS);
      const cores = {
        api: used.api / windowS,
        worker: used.worker / windowS,
        redis: perS(used.redis),
        postgres: used.postgres! / windowS,
        generator: used.generator / windowS,
        machine: used.machine / windowS,
        steal: used.steal / windowS,
      };
      const result = { name, windowS, feed: run.feed, like: run.like, cores, erasure: run.extra };
      if (run.extra) run.extra.byPhase = byErasurePhase(run.records, run.extra.timeline);
      log(
        `  ${name}: ${run.sendingS.toFixed(0)} s; feed p50 ${result.feed.p50Ms.toFixed(1)} ms, p99 ${result.feed.p99Ms.toFixed(1)} ms, ${result.feed.failures} failed; likes p50 ${result.like.p50Ms.toFixed(1)} ms, p99 ${result.like.p99Ms.toFixed(1)} ms, ${result.like.failures} failed; cores: API ${cores.api.toFixed(2)}, worker ${cores.worker.toFixed(2)}, Redis ${cores.redis?.toFixed(2) ?? '-'}, PostgreSQL ${cores.postgres.toFixed(2)}, load generator ${cores.generator.toFixed(2)}, machine ${cores.machine.toFixed(2)}`,
      );
      return result;
    };

    const phases: Awaited<ReturnType<typeof phase>>[] = [];
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

/** Reads the erasure's row until it is DONE: its timeline, duration and rate. */
async function followErasure(db: pg.Pool, startedAt: number, log: (line: string) => void) {
  /** How far the erasure was at each reading: seconds since phase 2 started, its phase, what its batches did. */
  const timeline: { atS: number; phase: string; done: Record<string, number> }[] = [];
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
          /** The load's latency by the erasure phase it was sent in (filled in by the caller). */
          byPhase: [] as ReturnType<typeof byErasurePhase>,
        };
      }
    }
    if (Date.now() > deadline) throw new Error(`the erasure was not DONE within ${ERASURE_TIMEOUT_MS / 60_000} minutes`);
    await sleep(POLL_MS);
  }
}
