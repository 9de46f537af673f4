// The feed scenario's lines in the bench's table: one row per run, and Tally's throughput
// against each baseline per page size, with the targets of issue 8 where there is one.
import { type Ratio, type TableRow, times } from '../lib/report.js';
import { FEED_SERVERS, type FeedRun, type FeedServerId, PAGES, type PageRoundTrips } from './feed.js';

/** Tally's req/s over the baseline's must reach these (a: at least 2.5× Apollo's defaults; d: within 80 % of the JIT ceiling). */
const TARGETS: Partial<Record<FeedServerId, number>> = { a: 2.5, d: 0.8 };

const runOf = (runs: readonly FeedRun[], server: FeedServerId, page: number) => {
  const run = runs.find((r) => r.server === server && r.query === 'feed' && r.page === page);
  if (!run) throw new Error(`no feed ${page} run of ${server}`);
  return run;
};

const floorOf = (runs: readonly FeedRun[]) => {
  const floor = runs.find((r) => r.query === 'floor');
  if (!floor) throw new Error('no floor run');
  return floor;
};

/** Redis round trips per feed page, whatever its size. */
const ROUND_TRIPS_TARGET = 2;

export function feedRatios(runs: readonly FeedRun[], roundTripsByPage: readonly PageRoundTrips[]): Ratio[] {
  const ratios: Ratio[] = [];
  const worst = roundTripsByPage.reduce((max, r) => (r.roundTrips > max.roundTrips ? r : max), roundTripsByPage[0]!);
  ratios.push({
    label: `Tally Redis round trips per feed page, most over pages of ${roundTripsByPage.map((r) => r.page).join(', ')}`,
    value: worst.roundTrips,
    format: (x) => x.toFixed(2),
    target: ROUND_TRIPS_TARGET,
    atMost: true,
    detail:
      roundTripsByPage.map((r) => `${r.page}: ${r.roundTrips.toFixed(2)} RT, ${r.commands.toFixed(1)} cmds`).join('; ') +
      ' (one request at a time)',
  });
  for (const page of PAGES) {
    const tally = runOf(runs, 'tally', page);
    for (const baseline of FEED_SERVERS.filter((s) => s.id !== 'tally')) {
      const other = runOf(runs, baseline.id, page);
      const target = TARGETS[baseline.id];
      ratios.push({
        label: `Tally feed ${page} / ${baseline.name}`,
        value: tally.load.rps / other.load.rps,
        detail: `req/s; p99 ${other.load.p99Ms} ms vs ${tally.load.p99Ms} ms Tally`,
        ...(target !== undefined && { target }),
      });
    }
    ratios.push({
      label: `Tally feed ${page} / floor`,
      value: tally.load.rps / floorOf(runs).load.rps,
      detail: 'req/s; the floor is HTTP + auth + Apollo with no data',
    });
  }
  return ratios;
}

/** The floor, then each page size with its servers side by side. */
export function feedRows(runs: readonly FeedRun[]): TableRow[] {
  const firstPage = PAGES[0];
  const order = (r: FeedRun) => (r.page ?? 0) * 100 + FEED_SERVERS.findIndex((s) => s.id === r.server);
  return [...runs]
    .sort((x, y) => order(x) - order(y))
    .map((r) => {
      const tally = r.page === null ? runOf(runs, 'tally', firstPage) : runOf(runs, 'tally', r.page);
      const vs =
        r.query === 'floor'
          ? `${times(r.load.rps / tally.load.rps)} Tally feed ${firstPage}`
          : r.server === 'tally'
            ? 'reference'
            : `Tally ${times(tally.load.rps / r.load.rps)}`;
      return {
        scenario: r.query === 'floor' ? 'feed (floor)' : `feed ${r.page}`,
        server: r.name,
        ...r.load,
        ...(r.redisAlone && { rtAlone: r.redisAlone.roundTrips }),
        ...(r.redisLoaded && { rtLoaded: r.redisLoaded.roundTrips, commands: r.redisLoaded.commands }),
        check: r.query === 'floor' ? 'same body' : 'same page',
        vs,
      };
    });
}
