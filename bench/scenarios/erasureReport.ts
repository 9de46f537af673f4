// The account-erasure scenario's table and its target, "no slower than noise" (docs/performance.md, "Account erasure").
import os from 'node:os';
import { columns } from '../lib/report.js';
import type { ErasureResults } from './erasure.js';
import { countsExact } from './erasureWorld.js';

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
