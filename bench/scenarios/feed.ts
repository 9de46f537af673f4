// Scenario "feed" (docs/performance.md, "The bench"): pages of 20 and 50 posts from Tally and
// four baselines on the same seeded data and bearer token, plus Tally's floor ({ __typename }).
import { createFeedRelationTables } from '../baselines/prismaCountFeed.js';
import { gql, runLoad } from '../lib/load.js';
import { type Ratio, type TableRow, times } from '../lib/report.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { FEED, FEED_CONNECTIONS, pageChecker, redisCells, redisPerRequest, timeInRounds, versus, warmUp } from './serverRuns.js';

export { FEED_CONNECTIONS, FEED_ROUNDS } from './serverRuns.js';
export const PAGES = [20, 50] as const;
const ROUND_TRIP_PAGES = [1, 10, 20, 50, 100]; // Tally's Redis round trips per request counted, one request at a time
const FLOOR = '{ __typename }';

/** In the order they are measured (Tally first: its pages are the reference). */
export const FEED_SERVERS = [
  { id: 'tally', kind: 'tally', name: 'Tally' },
  { id: 'a', kind: 'apollo-default-feed', name: '(a) Apollo defaults, same DataLoaders' },
  { id: 'b', kind: 'naive-feed', name: '(b) naive, no DataLoader' },
  { id: 'c', kind: 'prisma-count-feed', name: '(c) Prisma _count' },
  { id: 'd', kind: 'jit-feed', name: '(d) graphql-jit, same DataLoaders' },
] as const satisfies readonly { id: string; kind: ServerKind; name: string }[];
type ServerId = (typeof FEED_SERVERS)[number]['id'];
// Issue 8: Tally's req/s over the baseline's reach these; its Redis round trips per page stay within ROUND_TRIPS_TARGET.
const TARGETS: Partial<Record<ServerId, number>> = { a: 2.5, d: 0.8 };
const ROUND_TRIPS_TARGET = 2;

type FeedResults = Awaited<ReturnType<typeof runFeedScenario>>;

export async function runFeedScenario(opts: { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number }) {
  const token = opts.world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const checkPage = pageChecker(opts.world, token);
  const oneByOne = (server: ServerHandle, n: number, query: string, variables: Record<string, unknown>) =>
    redisPerRequest(server, async () => {
      for (let i = 0; i < n; i++) await gql(server.url, query, variables, token);
      return n;
    });
  // Not timed: Redis per request alone (20 requests) and loaded, and a warm-up.
  const prepare = async (server: ServerHandle, id: ServerId, name: string, page: number | null, expectBody: string) => {
    const run = { name, server: id, query: page === null ? ('floor' as const) : ('feed' as const), page };
    const [query, variables] = page === null ? [FLOOR, {}] : [FEED, { first: page }];
    const body = JSON.stringify({ query, variables });
    const redisAlone = await oneByOne(server, 20, query, variables);
    await warmUp(server, body, headers, opts.warmupS);
    // A fixed number of requests, all answered: a timed run ends with requests in flight whose commands would count, not their answers.
    const amount = FEED_CONNECTIONS * 8;
    const redisLoaded = await redisPerRequest(server, async () => {
      const { failures } = await runLoad({ url: server.url, connections: FEED_CONNECTIONS, amount, body, headers, expectBody });
      if (failures > 0) throw new Error(`${name}: ${failures} failed requests`);
      return amount;
    });
    return { run, redisAlone, redisLoaded, server, label: `${id} ${page ?? 'floor'}`, body, expectBody };
  };

  const servers: ServerHandle[] = [];
  const roundTripsByPage = [];
  try {
    const cases = [];
    for (const { id, kind, name } of FEED_SERVERS) {
      if (kind === 'prisma-count-feed') await createFeedRelationTables(opts.serverEnv.DATABASE_URL!, opts.world.expected.values());
      // ROLE=api: an idle aggregator's polling would only add noise to a read-only benchmark.
      const server = await startServer(kind, { ...opts.serverEnv, ROLE: 'api' });
      servers.push(server);
      const pages = [];
      for (const page of PAGES) pages.push(await checkPage(server, name, page));
      if (id === 'tally') {
        const floor = await gql(server.url, FLOOR, {}, token);
        cases.push(await prepare(server, id, 'Tally { __typename }', null, floor.text));
        for (const page of ROUND_TRIP_PAGES) roundTripsByPage.push({ page, ...(await oneByOne(server, 10, FEED, { first: page }))! });
      }
      for (const [i, page] of PAGES.entries()) cases.push(await prepare(server, id, name, page, pages[i]!));
    }
    const timed = await timeInRounds(cases, opts.durationS, headers, false);
    const runs = cases.map((c, i) => ({ ...c.run, ...timed[i]!, redisAlone: c.redisAlone, redisLoaded: c.redisLoaded }));
    return { runs, roundTripsByPage };
  } finally {
    for (const server of servers) await server.stop();
  }
}

const runOf = (runs: FeedResults['runs'], server: ServerId, page: number | null) =>
  runs.find((r) => r.server === server && r.page === page)!;

export function feedRatios(runs: FeedResults['runs'], roundTripsByPage: FeedResults['roundTripsByPage']): Ratio[] {
  const worst = Math.max(...roundTripsByPage.map((r) => r.roundTrips));
  const perPage = roundTripsByPage.map((r) => `${r.page}: ${r.roundTrips.toFixed(2)} RT, ${r.commands.toFixed(1)} cmds`);
  const roundTrips: Ratio = {
    label: `Tally Redis round trips per feed page, most over pages of ${roundTripsByPage.map((r) => r.page).join(', ')}`,
    value: worst,
    format: (x) => x.toFixed(2),
    target: ROUND_TRIPS_TARGET,
    atMost: true,
    detail: `${perPage.join('; ')} (one request at a time)`,
  };
  return [
    roundTrips,
    ...PAGES.flatMap((page) => {
      const tally = runOf(runs, 'tally', page).load;
      return [
        ...FEED_SERVERS.slice(1).map((b) => versus(`Tally feed ${page} / ${b.name}`, tally, runOf(runs, b.id, page).load, TARGETS[b.id])),
        versus(`Tally feed ${page} / floor`, tally, runOf(runs, 'tally', null).load),
      ];
    }),
  ];
}

/** The floor, then each page size with its servers side by side. */
export function feedRows(runs: FeedResults['runs']): TableRow[] {
  const cells = (r: (typeof runs)[number]) => ({ server: r.name, ...r.load, ...redisCells(r.redisAlone, r.redisLoaded) });
  const floor = runOf(runs, 'tally', null);
  const first = runOf(runs, 'tally', PAGES[0]).load;
  return [
    { scenario: 'feed (floor)', ...cells(floor), check: 'same body', vs: `${times(floor.load.rps / first.rps)} Tally feed ${PAGES[0]}` },
    ...PAGES.flatMap((page) =>
      FEED_SERVERS.map(({ id }) => {
        const r = runOf(runs, id, page);
        const vs = id === 'tally' ? 'reference' : `Tally ${times(runOf(runs, 'tally', page).load.rps / r.load.rps)}`;
        return { scenario: `feed ${page}`, ...cells(r), check: 'same page', vs };
      }),
    ),
  ];
}
