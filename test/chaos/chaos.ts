// The fault suite: for each event log and fault, a fresh split deployment, a warm-up that
// must converge and check clean (the state every row starts from), the load with the fault
// injected on schedule, then the wait for convergence and every check. `runChaos` is what
// `npm run chaos` (test/chaos/run.ts) and a reduced vitest run call.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { judgeSamples, type SamplerVerdict, startCountSampler } from './asOfSampler.js';
import { type ChangedVerdict, type Convergence, converge, judgeChanged } from './checks.js';
import { cleanupAll, onCleanup } from './cleanup.js';
import { gql } from './client.js';
import { type Deployment, type EventLogMode, startDeployment } from './deployment.js';
import { AOF_BOUND_MS, FAULTS, type Fault, type FaultResult } from './faults.js';
import { type ChaosKafka, startChaosKafka } from './kafka.js';
import { summarizeLogs } from './logs.js';
import type { Row } from './report.js';
import { GroundTruth, isReaction, kindOfFact, type Loss } from './truth.js';
import { type Actors, createRng, planFlips, planRandom, runLoad } from './workload.js';

export interface Scale {
  users: number;
  posts: number;
  opsPerPost: number;
  /** The load is spread over about this long, so mid-load faults really happen mid-load. */
  loadSeconds: number;
}

export const DEFAULT_SCALE: Scale = { users: 24, posts: 3, opsPerPost: 2100, loadSeconds: 20 };

export interface ChaosOptions {
  eventLogs: EventLogMode[];
  /** Fault names (faults.ts); all when empty. */
  faults?: string[];
  scale?: Partial<Scale>;
  seed?: number;
  /** Time allowed to converge after the load and the fault. */
  convergeCapMs?: number;
  /** Where each row's process logs go (a folder per row). */
  logDir: string;
  /** Called as each row finishes (progress output). */
  onRow?(row: Row): void;
  log?(line: string): void;
}

const WARMUP_OPS_PER_USER = 4;
/** The first convergence also waits for Kafka consumer groups to form. */
const WARMUP_CAP_MS = 90_000;
const OP_DEADLINE_MS = 90_000;
const FLIP_PASSES = 3;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function createPosts(dep: Deployment, count: number): Promise<number[]> {
  const token = await dep.sign(9001);
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    for (let attempt = 0; ; attempt++) {
      const res = await gql<{ id: string }>(
        dep.api.url,
        'mutation($t: String!) { createPost(input: { title: $t, body: "chaos" }) { id } }',
        { t: `chaos post ${i + 1}` },
        { token, field: 'createPost' },
      );
      if (res.ok) {
        ids.push(Number(res.data.id));
        break;
      }
      if (!res.retryable || attempt > 20) throw new Error(`createPost failed: ${res.code} ${res.message}`);
      await sleep(250);
    }
  }
  return ids;
}

async function runRow(mode: EventLogMode, fault: Fault, kafka: ChaosKafka | null, scale: Scale, options: ChaosOptions): Promise<Row> {
  const rowStart = Date.now();
  const logDir = join(options.logDir, `${mode}-${fault.name}`);
  const workDir = mkdtempSync(join(tmpdir(), 'tally-chaos-'));
  const removeWorkDir = onCleanup(`scratch ${workDir}`, () => rmSync(workDir, { recursive: true, force: true }));
  const notes: string[] = [];
  const failures: string[] = [];
  const errors = new Map<string, number>();
  const truth = new GroundTruth();
  const log = options.log ?? (() => {});
  let planned = 0;
  let loadMs = 0;
  let final: Convergence | null = null;
  let changed: ChangedVerdict = { wrong: 0, wrongAfterLoss: 0, judged: 0, againstKnown: 0, details: [] };
  let loss: Loss | null = null;
  let asOf: SamplerVerdict | null = null;
  let sampler: ReturnType<typeof startCountSampler> | null = null;
  let dep: Deployment | null = null;
  try {
    dep = await startDeployment({
      eventLog: mode,
      kafka: kafka?.kafka ?? null,
      logDir,
      redisArgs: fault.redisArgs?.(workDir),
      ...fault.deployment,
    });
    const postIds = await createPosts(dep, scale.posts);
    const users = Array.from({ length: scale.users }, (_, i) => i + 1);
    const tokens = new Map(await Promise.all(users.map(async (u) => [u, await dep!.sign(u)] as const)));
    const actors: Actors = { apiUrl: dep.api.url, users, postIds, tokens, keyPrefix: `${mode}-${fault.name}` };
    // Every row plays the same workload (same seed), so rows and modes compare.
    const rng = createRng(options.seed ?? 1);
    const loadOptions = { durationMs: scale.loadSeconds * 1000, opDeadlineMs: OP_DEADLINE_MS };

    // Warm-up: the row starts from a converged, checked state (and Kafka's groups have formed).
    const warmPlan = planRandom(rng, actors, scale.users * WARMUP_OPS_PER_USER, 1, 'warm');
    planned += warmPlan.flat().length;
    await runLoad(actors, warmPlan, truth, errors, { durationMs: 0, opDeadlineMs: OP_DEADLINE_MS }).done;
    const warm = await converge(dep, actors, truth, Promise.resolve(null), {
      from: Date.now(),
      countsSince: truth.lastAckAt(),
      capMs: WARMUP_CAP_MS,
    });
    if (!warm.converged)
      failures.push(
        `the warm-up did not converge within ${WARMUP_CAP_MS / 1000} s (${warm.lastError ?? warm.verdict?.details.slice(0, 3).join('; ')})`,
      );
    log(`  ${mode} ${fault.name}: warm-up ${warm.converged ? `converged in ${((warm.ms ?? 0) / 1000).toFixed(1)} s` : 'did NOT converge'}`);

    const mainPlan = planRandom(rng, actors, scale.posts * scale.opsPerPost, 1, 'load');
    planned += mainPlan.flat().length;
    const ctx = { dep, actors, truth, workDir, note: (text: string) => notes.push(text) };
    // Counts are sampled from the load's start to the end of the wait, and judged at the end.
    sampler = startCountSampler(actors);
    let faultResult: FaultResult;
    let loadEnd: number;
    if (fault.when === 'mid-load') {
      const load = runLoad(actors, mainPlan, truth, errors, loadOptions);
      const injected = load.reached(fault.at ?? 0.3).then(() => {
        notes.unshift(`injected at ${Math.round((fault.at ?? 0.3) * 100)}% of the load`);
        return fault.inject(ctx);
      });
      // Both settle before anything is judged or stopped: a failed fault must not leave the load running.
      const [loadOutcome, faultOutcome] = await Promise.allSettled([load.done, injected]);
      if (loadOutcome.status === 'rejected') throw loadOutcome.reason;
      if (faultOutcome.status === 'rejected') throw faultOutcome.reason;
      const done = loadOutcome.value;
      faultResult = faultOutcome.value;
      loadMs = done.endedAt - done.startedAt;
      loadEnd = done.endedAt;
    } else {
      const first = await runLoad(actors, mainPlan, truth, errors, loadOptions).done;
      const settled = await converge(dep, actors, truth, Promise.resolve(null), {
        from: first.endedAt,
        countsSince: truth.lastAckAt(),
        capMs: options.convergeCapMs ?? 60_000,
      });
      if (!settled.converged)
        failures.push(
          `the load before the fault did not converge (${settled.lastError ?? settled.verdict?.details.slice(0, 3).join('; ')})`,
        );
      else notes.push(`the load converged ${((settled.ms ?? 0) / 1000).toFixed(1)} s after it ended; fault injected then`);
      faultResult = await fault.inject(ctx);
      const flips = planFlips(rng, actors, truth, FLIP_PASSES, 2, 'flip');
      planned += flips.flat().length;
      const second = await runLoad(actors, flips, truth, errors, { ...loadOptions, durationMs: loadOptions.durationMs / 4 }).done;
      loadMs = first.endedAt - first.startedAt + (second.endedAt - second.startedAt);
      loadEnd = second.endedAt;
    }

    failures.push(...(faultResult.problems ?? []));
    const lossPromise: Promise<Loss | null> = faultResult.loss ? faultResult.loss() : Promise.resolve(null);
    final = await converge(dep, actors, truth, lossPromise, {
      from: Math.max(loadEnd, faultResult.endedAt),
      countsSince: truth.lastAckAt(),
      capMs: options.convergeCapMs ?? 60_000,
    });
    loss = await lossPromise;
    asOf = judgeSamples(truth, loss, await sampler.stop(), actors);
    changed = judgeChanged(truth, loss);
    if (loss) notes.push(`after the loss, ${changed.againstKnown} first changes per fact were judged against ${loss.source}`);
  } catch (error) {
    failures.push(`harness error: ${(error as Error).stack ?? error}`);
  } finally {
    await sampler?.stop();
    await dep?.stop().catch((error: unknown) => failures.push(`stopping the deployment: ${(error as Error).message}`));
    await removeWorkDir();
  }

  const v = final?.verdict ?? null;
  if (final && !final.converged) {
    failures.push(
      `did not converge within ${(options.convergeCapMs ?? 60_000) / 1000} s${v && v.countsNotCurrent > 0 ? ` (${v.countsNotCurrent} posts' counts without a current asOf)` : ''}${final.lastError ? `; last read error: ${final.lastError}` : ''}`,
    );
  }
  if (changed.wrong > 0) {
    failures.push(
      `${changed.wrong} of ${changed.judged} acknowledgements answered the wrong \`changed\`${loss ? ` (${changed.wrongAfterLoss} of them after Redis came back)` : ''}`,
    );
  }
  if (asOf && asOf.broken > 0) {
    failures.push(`${asOf.broken} of ${asOf.judged} sampled counts broke their asOf (e.g. ${asOf.details[0] ?? '?'})`);
  }
  if (truth.unacked.length > 0) failures.push(`${truth.unacked.length} operations never acknowledged (e.g. ${truth.unacked[0]!.reason})`);
  if (!final && failures.length === 0) failures.push('no final check');
  const row: Row = {
    eventLog: mode,
    fault: fault.name,
    title: fault.title,
    ops: { planned, acked: truth.acks.length, unacked: truth.unacked.length },
    facts: { set: truth.facts().length, reactions: truth.facts().filter((key) => isReaction(kindOfFact(key))).length },
    lost: v?.lost ?? 0,
    lostWithinLag: v?.lostWithinLag ?? 0,
    lagMs: v?.lagMs ?? null,
    atRisk: loss ? (v?.atRisk ?? 0) : null,
    atRiskLagMs: v?.atRiskLagMs ?? null,
    boundMs: fault.name === 'redis-aof-kill' ? AOF_BOUND_MS : null,
    doubled: v?.doubled ?? 0,
    short: v?.short ?? 0,
    wrongState: v?.wrongState ?? 0,
    wrongChanged: changed.wrong,
    changedJudgedAgainstKnown: changed.againstKnown,
    pgMismatches: v?.pgMismatches ?? 0,
    asOfSamples: asOf?.judged ?? 0,
    asOfBroken: asOf?.broken ?? 0,
    clientErrors: Object.fromEntries(errors),
    converged: final?.converged ?? false,
    convergeMs: final?.ms ?? null,
    pass: failures.length === 0 && final !== null && final.converged,
    failures,
    notes,
    details: [...(v?.details ?? []), ...changed.details, ...(asOf?.details ?? [])],
    logDir,
    logSummary: summarizeLogs(logDir),
    ms: { load: loadMs, row: Date.now() - rowStart },
  };
  options.onRow?.(row);
  return row;
}

/** Runs the chosen faults (all by default) with each chosen event log; one row each. */
export async function runChaos(options: ChaosOptions): Promise<Row[]> {
  const scale = { ...DEFAULT_SCALE, ...options.scale };
  const wanted = options.faults && options.faults.length > 0 ? options.faults : FAULTS.map((f) => f.name);
  const unknown = wanted.filter((name) => !FAULTS.some((f) => f.name === name));
  if (unknown.length > 0) throw new Error(`unknown fault(s): ${unknown.join(', ')}; known: ${FAULTS.map((f) => f.name).join(', ')}`);
  const faults = FAULTS.filter((f) => wanted.includes(f.name));
  const rows: Row[] = [];
  try {
    for (const mode of options.eventLogs) {
      const kafka = mode === 'kafka' ? await startChaosKafka() : null;
      if (kafka) options.log?.(`kafka: ${kafka.kafka.label}`);
      try {
        for (const fault of faults) {
          options.log?.(`${mode} ${fault.name}: ${fault.title}`);
          rows.push(await runRow(mode, fault, kafka, scale, options));
        }
      } finally {
        await kafka?.stop();
      }
    }
  } finally {
    await cleanupAll();
  }
  return rows;
}
