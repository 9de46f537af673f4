// The hot-post scenario's lines in the bench's table: one row per server, and Tally against
// PostgreSQL with the targets of issue 8 (throughput ≥ 3× on one hot row, freshness p99 ≤ 1 s).
import { type Ratio, type TableRow, times } from '../lib/report.js';
import type { LikeRun } from './likes.js';

const THROUGHPUT_TARGET = 3;
const FRESHNESS_P99_TARGET_MS = 1000;

const ms = (x: number | null) => (x === null ? '∞' : `${x.toFixed(0)} ms`);

function runsOf(runs: readonly LikeRun[]) {
  const [tally, pg, pgAsync] = runs;
  if (!tally || !pg || !pgAsync) throw new Error('the hot-post scenario needs its three runs (Tally, PostgreSQL, sync commit off)');
  return { tally, pg, pgAsync };
}

export function likeRatios(runs: readonly LikeRun[]): Ratio[] {
  const { tally, pg, pgAsync } = runsOf(runs);
  const f = tally.freshness;
  return [
    {
      label: 'Tally likes/s / PostgreSQL, one hot post',
      value: tally.load.rps / pg.load.rps,
      detail: `p99 ${pg.load.p99Ms} ms PostgreSQL vs ${tally.load.p99Ms} ms Tally`,
      target: THROUGHPUT_TARGET,
    },
    {
      // No target: the baseline of issue 8 waits for its commit like any PostgreSQL app does.
      label: 'Tally likes/s / PostgreSQL (synchronous_commit=off), one hot post',
      value: tally.load.rps / pgAsync.load.rps,
      detail: `p99 ${pgAsync.load.p99Ms} ms vs ${tally.load.p99Ms} ms; PostgreSQL not waiting for its WAL flush, as Tally's Redis does not`,
    },
    {
      label: 'Tally freshness p99, one hot post',
      // Likes never seen in the count are infinitely stale.
      value: f.p99Ms ?? Infinity,
      format: (x) => ms(Number.isFinite(x) ? x : null),
      target: FRESHNESS_P99_TARGET_MS,
      atMost: true,
      detail: `ack -> count includes it, p50 ${ms(f.p50Ms)}, max ${ms(f.maxMs)}; read by GraphQL post.counts every ≥${f.pollIntervalMs} ms (mean ${f.meanPollIntervalMs} ms, read p99 ${ms(f.pollLatencyP99Ms)}); PostgreSQL p99 ${ms(pg.freshness.p99Ms)}`,
    },
  ];
}

export function likeRows(runs: readonly LikeRun[], likes: number): TableRow[] {
  const { pg } = runsOf(runs);
  return runs.map((r) => ({
    scenario: 'hot post',
    server: r.name,
    ...r.load,
    ...(r.redisLoaded && { rtLoaded: r.redisLoaded.roundTrips, commands: r.redisLoaded.commands }),
    check: `${r.exact ? 'exact' : 'NOT EXACT'} ${r.finalCount}/${likes}, fresh p50 ${ms(r.freshness.p50Ms)} p99 ${ms(r.freshness.p99Ms)}`,
    vs: r === pg ? 'baseline' : `${times(r.load.rps / pg.load.rps)} PostgreSQL`,
  }));
}
