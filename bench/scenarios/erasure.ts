// Scenario "account erasure" (docs/performance.md, "Account erasure").
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig } from '../../src/config.js';
import { createKeys } from '../../src/redis/keys.js';
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { gql } from '../lib/httpPost.js';
import { cpuBetween, readCpu } from '../lib/procStats.js';
import { inBatches, waitUntilPersisted } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';
import { byErasurePhase, createLoad, FEED_QUERY, LIKED_BY_LOAD } from './erasureLoad.js';
import { checkCounts, countsExact, LOAD_USERS, seedErasureWorld, VICTIM, victimLeft } from './erasureWorld.js';

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
