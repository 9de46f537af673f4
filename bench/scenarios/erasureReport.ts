// The account-erasure scenario's table and its target from issue 16, "no slower than noise"
// (docs/performance.md, "Account erasure").
import os from 'node:os';
import { columns } from '../lib/report.js';
import type { ErasureResults } from './erasure.js';

/** Noise is at least this share of the higher baseline (two baselines are a small sample). */
const MIN_NOISE = 0.1;
/** Throughput during the erasure may be this share below the lower baseline's. */
const THROUGHPUT_SLACK = 0.01;
const noise = (b: number, a: number) => Math.max(b, a) + Math.max(Math.abs(b - a), MIN_NOISE * Math.max(b, a));
/** What is judged, its limit from the two baselines, and whether the erasure must stay at least (else at most) at it. */
const RULES = [
  ['p50 ms', 'p50Ms', noise, false],
  ['p99 ms', 'p99Ms', noise, false],
  ['failures', 'failures', Math.max, false],
  ['answered/s', 'achievedPerS', (b: number, a: number) => Math.min(b, a) * (1 - THROUGHPUT_SLACK), true],
] as const;

type Stream = ErasureResults['phases'][number]['feed'];
const ms = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '-');
const streamHeader = (name: string) => [`${name} ok/sent per s`, 'p50', 'p99', 'max', 'worst 10 s p99', 'failed'];
const streamCells = (s: Stream) => [
  `${s.achievedPerS.toFixed(1)}/${s.offeredPerS.toFixed(1)}`,
  ...[s.p50Ms, s.p99Ms, s.maxMs, s.worstWindowP99Ms].map(ms),
  String(s.failures),
];
const CORES = { api: 'API', worker: 'worker', redis: 'Redis', postgres: 'PostgreSQL', generator: 'generator', machine: 'machine' };

export function erasureTargets({ phases: [before, during, after] }: ErasureResults) {
  return (['feed', 'like'] as const).flatMap((stream) =>
    RULES.map(([what, field, limitOf, atLeast]) => {
      const [b, d, a] = [before[stream][field], during[stream][field], after[stream][field]];
      const limit = limitOf(b, a);
      return { label: `${stream} ${what}`, during: d, before: b, after: a, limit, atLeast, met: atLeast ? d >= limit : d <= limit };
    }),
  );
}

/** Whether every count was exact and nothing of the victim is left. */
export function erasureCorrect({ checks: { after, victim } }: ErasureResults): boolean {
  const exact = after.posts.mismatches.length + after.users.mismatches.length === 0;
  return exact && Object.values(victim.rows).every((n) => n === 0) && victim.redisKeys === 0 && victim.state === 'DONE';
}

export function erasureTable(results: ErasureResults): string {
  const { settings, config, seed, phases, checks } = results;
  const erasure = phases[1].erasure!;
  const main = columns(
    ['account erasure', 's', ...streamHeader('feed'), ...streamHeader('likes'), ...Object.values(CORES)],
    phases.map((x) => [
      x.name,
      x.windowS.toFixed(0),
      ...streamCells(x.feed),
      ...streamCells(x.like),
      ...Object.keys(CORES).map((k) => x.cores[k]?.toFixed(2) ?? '-'),
    ]),
    (i) => i > 0,
  );
  const byPhase = columns(
    ['load by erasure phase', 's', 'feed sent', 'p50', 'p99', 'max', 'likes sent', 'p50', 'p99', 'max'],
    erasure.byPhase.map((x) => [
      x.phase,
      x.seconds.toFixed(1),
      ...[x.feed, x.like].flatMap((s) => [String(s.sent), ...[s.p50Ms, s.p99Ms, s.maxMs].map(ms)]),
    ]),
    (i) => i > 0,
  );
  const done = Object.entries(erasure.done).map(([k, v]) => `${k} ${v}`);
  const { victim } = checks;
  const exact = (c: { compared: number; mismatches: unknown[] }, what: string) =>
    c.mismatches.length === 0
      ? `${c.compared} ${what} exact`
      : `${c.mismatches.length} WRONG of ${c.compared} ${what} (${JSON.stringify(c.mismatches.slice(0, 3))})`;
  const targets = erasureTargets(results);
  const verdict = (met: boolean) => (met ? 'met' : 'NOT MET');
  return [
    main,
    `Latency in ms (request sent -> answer); ok/sent per s = right answers and requests per second of the phase; cores = CPU over the phase (PostgreSQL = every postgres process of the machine; generator = the bench process sending the load; machine = all cores busy, of ${os.cpus().length}). Load: ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s, open loop. The victim: ${seed.likes} likes, ${seed.favs} favourites and follows (${seed.victimFacts} facts) through the like path in ${seed.seconds.toFixed(0)} s; ${seed.otherLikes} likes by others on the same posts.`,
    `Erasure (ERASURE_BATCH_SIZE ${config.batchSize}, ERASURE_BUSY_PERCENT ${config.busyPercent}): ${erasure.durationS.toFixed(1)} s from eraseAccount to DONE; ${erasure.factsUndone} facts undone, ${erasure.factsPerS.toFixed(0)}/s over the whole erasure, ${Number.isFinite(erasure.factsPhasePerS) ? erasure.factsPhasePerS.toFixed(0) : '-'}/s in its facts phase; batches did: ${done.join(', ')}.`,
    '',
    byPhase,
    '',
    `Checks after: ${exact(checks.after.posts, 'liked posts: likes and favs (GraphQL posts(ids)) = recount of active facts in PostgreSQL')}; ${exact(checks.after.users, 'authors, followees and followers: followers, followings, likesReceived (GraphQL user) = recount')}; victim rows left ${JSON.stringify(victim.rows)}, cached counter keys left ${victim.redisKeys}, erasure state ${victim.state}: ${erasureCorrect(results) ? 'ok' : 'NOT OK'}.`,
    '',
    `Target "no slower than noise" (p50 and p99 during the erasure <= the higher baseline + noise, noise = |before - after| or ${MIN_NOISE * 100} % of the higher baseline, whichever is larger; failures no more than a baseline's; answered/s within ${THROUGHPUT_SLACK * 100} % of the lower baseline):`,
    ...targets.map(
      (t) =>
        `  ${t.label}: during ${ms(t.during)} vs baselines ${ms(t.before)} / ${ms(t.after)}, ${t.atLeast ? 'at least' : 'at most'} ${ms(t.limit)}: ${verdict(t.met)}`,
    ),
    `Erasing a user with ${seed.likes} likes slows the feed and the like path by no more than noise: ${verdict(targets.every((t) => t.met))}`,
  ].join('\n');
}
