// The account-erasure scenario's table (the three phases side by side, the load's latency
// by erasure phase, the checks) and its target from issue 16: erasing a user with 100,000
// likes slows neither the feed nor the like path by more than noise.
import os from 'node:os';
import { columns } from '../lib/report.js';
import type { ErasurePhaseResult, ErasureResults } from './erasure.js';
import type { StreamStats } from './erasureLoad.js';

/** Noise is at least this share of the higher baseline (two baselines are a small sample). */
const MIN_NOISE = 0.1;
/** Throughput during the erasure may be this share below the lower baseline's. */
const THROUGHPUT_SLACK = 0.01;

export interface ErasureTarget {
  label: string;
  during: number;
  before: number;
  after: number;
  /** The most the erasure phase may show (latency, failures) or the least (throughput). */
  limit: number;
  atLeast: boolean;
  met: boolean;
}

const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const perS = (x: number) => x.toFixed(1);

function phasesOf(results: ErasureResults) {
  const find = (name: ErasurePhaseResult['name']) => {
    const found = results.phases.find((x) => x.name === name);
    if (!found) throw new Error(`the erasure scenario has no "${name}" phase`);
    return found;
  };
  return { before: find('baseline before'), during: find('during erasure'), after: find('baseline after') };
}

export function erasureTargets(results: ErasureResults): ErasureTarget[] {
  const { before, during, after } = phasesOf(results);
  const targets: ErasureTarget[] = [];
  for (const [name, pick] of [
    ['feed', (x: ErasurePhaseResult) => x.feed],
    ['like', (x: ErasurePhaseResult) => x.like],
  ] as const) {
    const [b, d, a] = [pick(before), pick(during), pick(after)];
    for (const field of ['p50Ms', 'p99Ms'] as const) {
      const hi = Math.max(b[field], a[field]);
      const limit = hi + Math.max(Math.abs(b[field] - a[field]), MIN_NOISE * hi);
      targets.push({
        label: `${name} ${field.slice(0, 3)} ms`,
        during: d[field],
        before: b[field],
        after: a[field],
        limit,
        atLeast: false,
        met: d[field] <= limit,
      });
    }
    const failLimit = Math.max(b.failures, a.failures);
    targets.push({
      label: `${name} failures`,
      during: d.failures,
      before: b.failures,
      after: a.failures,
      limit: failLimit,
      atLeast: false,
      met: d.failures <= failLimit,
    });
    const low = Math.min(b.achievedPerS, a.achievedPerS) * (1 - THROUGHPUT_SLACK);
    targets.push({
      label: `${name} answered/s`,
      during: d.achievedPerS,
      before: b.achievedPerS,
      after: a.achievedPerS,
      limit: low,
      atLeast: true,
      met: d.achievedPerS >= low,
    });
  }
  return targets;
}

/** Whether every count was exact and nothing of the victim is left. */
export function erasureCorrect(results: ErasureResults): boolean {
  const { after, victim } = results.checks;
  return (
    after.posts.mismatches.length === 0 &&
    after.users.mismatches.length === 0 &&
    Object.values(victim.rows).every((n) => n === 0) &&
    victim.redisKeys === 0 &&
    victim.state === 'DONE'
  );
}

const streamCells = (s: StreamStats) => [
  `${perS(s.achievedPerS)}/${perS(s.offeredPerS)}`,
  ms(s.p50Ms),
  ms(s.p99Ms),
  ms(s.maxMs),
  ms(s.worstWindowP99Ms),
  String(s.failures),
];

export function erasureTable(results: ErasureResults): string {
  const { during } = phasesOf(results);
  const erasure = during.erasure!;
  const { settings, config, seed, checks } = results;
  const cores = (x: number | null) => (x === null ? '-' : x.toFixed(2));
  const main = columns(
    [
      'account erasure',
      's',
      'feed ok/sent per s',
      'p50',
      'p99',
      'max',
      'worst 10 s p99',
      'failed',
      'likes ok/sent per s',
      'p50',
      'p99',
      'max',
      'worst 10 s p99',
      'failed',
      'API',
      'worker',
      'Redis',
      'PostgreSQL',
      'generator',
      'machine',
    ],
    results.phases.map((x) => [
      x.name,
      x.windowS.toFixed(0),
      ...streamCells(x.feed),
      ...streamCells(x.like),
      cores(x.cores.api),
      cores(x.cores.worker),
      cores(x.cores.redis),
      cores(x.cores.postgres),
      cores(x.cores.generator),
      cores(x.cores.machine),
    ]),
    (i) => i > 0,
  );
  const byPhase = columns(
    ['load by erasure phase', 's', 'feed sent', 'p50', 'p99', 'max', 'likes sent', 'p50', 'p99', 'max'],
    erasure.byPhase.map((x) => [
      x.phase,
      x.seconds.toFixed(1),
      String(x.feed.sent),
      ms(x.feed.p50Ms),
      ms(x.feed.p99Ms),
      ms(x.feed.maxMs),
      String(x.like.sent),
      ms(x.like.p50Ms),
      ms(x.like.p99Ms),
      ms(x.like.maxMs),
    ]),
    (i) => i > 0,
  );
  const done = Object.entries(erasure.done)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  const left = checks.victim;
  const mismatchText = (c: { compared: number; mismatches: unknown[] }, what: string) =>
    c.mismatches.length === 0
      ? `${c.compared} ${what} exact`
      : `${c.mismatches.length} WRONG of ${c.compared} ${what} (${JSON.stringify(c.mismatches.slice(0, 3))})`;
  const targets = erasureTargets(results);
  const met = targets.every((t) => t.met);
  const targetLine = (t: ErasureTarget) =>
    `  ${t.label}: during ${ms(t.during)} vs baselines ${ms(t.before)} / ${ms(t.after)}, ${t.atLeast ? 'at least' : 'at most'} ${ms(t.limit)}: ${t.met ? 'met' : 'NOT MET'}`;
  return [
    main,
    `Latency in ms (request sent -> answer); ok/sent per s = right answers and requests per second of the phase; cores = CPU over the phase (PostgreSQL = every postgres process of the machine; generator = the bench process sending the load; machine = all cores busy, of ${os.cpus().length}). Load: ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s, open loop. The victim: ${seed.likes} likes, ${seed.favs} favourites and follows (${seed.victimFacts} facts) through the like path in ${seed.seconds.toFixed(0)} s; ${seed.otherLikes} likes by others on the same posts.`,
    `Erasure (ERASURE_BATCH_SIZE ${config.batchSize}, ERASURE_BUSY_PERCENT ${config.busyPercent}): ${erasure.durationS.toFixed(1)} s from eraseAccount to DONE; ${erasure.factsUndone} facts undone, ${erasure.factsPerS.toFixed(0)}/s over the whole erasure, ${Number.isFinite(erasure.factsPhasePerS) ? erasure.factsPhasePerS.toFixed(0) : '-'}/s in its facts phase; batches did: ${done}.`,
    '',
    byPhase,
    '',
    `Checks after: ${mismatchText(checks.after.posts, 'liked posts: likes and favs (GraphQL posts(ids)) = recount of active facts in PostgreSQL')}; ${mismatchText(checks.after.users, 'authors, followees and followers: followers, followings, likesReceived (GraphQL user) = recount')}; victim rows left ${JSON.stringify(left.rows)}, cached counter keys left ${left.redisKeys}, erasure state ${left.state}: ${erasureCorrect(results) ? 'ok' : 'NOT OK'}.`,
    '',
    `Target "no slower than noise" (p50 and p99 during the erasure <= the higher baseline + noise, noise = |before - after| or ${MIN_NOISE * 100} % of the higher baseline, whichever is larger; failures no more than a baseline's; answered/s within ${THROUGHPUT_SLACK * 100} % of the lower baseline):`,
    ...targets.map(targetLine),
    `Erasing a user with ${seed.likes} likes slows the feed and the like path by no more than noise: ${met ? 'met' : 'NOT MET'}`,
  ].join('\n');
}
