// Scenario "feed": pages of 20 and 50 posts with counts, the viewer's state and the author,
// with the same bearer token, from Tally and four baselines that read the same seeded data
// (docs/performance.md, "The bench"); plus Tally's floor ({ __typename }: HTTP + auth + Apollo,
// no data). Every server must answer the same, correct page before it is timed.
import { isDeepStrictEqual } from 'node:util';
import { createFeedRelationTables } from '../baselines/prismaCountFeed.js';
import { gql, type LoadResult, runLoad } from '../lib/load.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { checkedPage, FEED, FEED_CONNECTIONS, type FeedEdge, timeInRounds } from './feedRounds.js';

export { FEED_CONNECTIONS, FEED_ROUNDS } from './feedRounds.js';
export const PAGES = [20, 50] as const;
/** Page sizes whose Redis round trips per request are counted on Tally (one request at a time). */
const ROUND_TRIP_PAGES = [1, 10, 20, 50, 100] as const;
const FLOOR = '{ __typename }';

/** The feed's servers, in the order they are measured (Tally first: its pages are the reference). */
export const FEED_SERVERS = [
  { id: 'tally', kind: 'tally', name: 'Tally' },
  { id: 'a', kind: 'apollo-default-feed', name: '(a) Apollo defaults, same DataLoaders' },
  { id: 'b', kind: 'naive-feed', name: '(b) naive, no DataLoader' },
  { id: 'c', kind: 'prisma-count-feed', name: '(c) Prisma _count' },
  { id: 'd', kind: 'jit-feed', name: '(d) graphql-jit, same DataLoaders' },
] as const satisfies readonly { id: string; kind: ServerKind; name: string }[];

export type FeedServerId = (typeof FEED_SERVERS)[number]['id'];
export type PageRoundTrips = RedisPerRequest & { page: number };
export interface RedisPerRequest {
  roundTrips: number;
  commands: number;
}

export interface FeedRun {
  name: string;
  server: FeedServerId;
  query: 'feed' | 'floor';
  /** Posts per page; null for the floor. */
  page: number | null;
  /** All rounds together: req/s over their summed time; p50/p99 the median of the rounds'. */
  load: LoadResult;
  /** req/s of each round, in order. */
  rounds: number[];
  /** Redis per request, one request at a time, and at full concurrency; null without Redis. */
  redisAlone: RedisPerRequest | null;
  redisLoaded: RedisPerRequest | null;
}

/** Redis per request over `work` (which resolves with its request count), from the server's own connection. */
async function redisPerRequest(server: ServerHandle, work: () => Promise<number>): Promise<RedisPerRequest | null> {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) return null;
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

/** The prisma-count baseline's like and fav rows, checked against the seeded world. */
async function prepareRelationTables(databaseUrl: string, world: World) {
  const rows = await createFeedRelationTables(databaseUrl);
  const seeded = { likes: 0, favs: 0 };
  for (const e of world.expected.values()) {
    seeded.likes += e.likes;
    seeded.favs += e.favs;
  }
  if (!isDeepStrictEqual(rows, seeded)) {
    throw new Error(`the relation facts hold ${JSON.stringify(rows)} likes and favs, the seed wrote ${JSON.stringify(seeded)}`);
  }
}

export async function runFeedScenario(opts: { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number }) {
  const { world } = opts;
  const token = world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const reference = new Map<number, FeedEdge[]>();
  type Run = Pick<FeedRun, 'name' | 'server' | 'query' | 'page'>;

  /** Not timed: Redis per request alone and under load, and a warm-up. */
  const prepare = async (server: ServerHandle, run: Run, expectBody: string) => {
    const [document, variables] = run.query === 'feed' ? [FEED, { first: run.page }] : [FLOOR, {}];
    const body = JSON.stringify({ query: document, variables });
    const redisAlone = await redisPerRequest(server, async () => {
      for (let i = 0; i < 20; i++) await gql(server.url, document, variables, token);
      return 20;
    });
    await runLoad({ url: server.url, connections: FEED_CONNECTIONS, durationS: opts.warmupS, body, headers });
    await server.settle();
    // Redis under load from a fixed number of requests, all answered: a timed run ends with
    // requests in flight whose commands would be counted but not their responses.
    const redisLoaded = await redisPerRequest(server, async () => {
      const amount = FEED_CONNECTIONS * 8;
      const { failures } = await runLoad({ url: server.url, connections: FEED_CONNECTIONS, amount, body, headers, expectBody });
      if (failures > 0) throw new Error(`${run.name}: ${failures} failed requests`);
      return amount;
    });
    return { server, run, label: `${run.server} ${run.page ?? 'floor'}`, body, expectBody, redisAlone, redisLoaded, rounds: [] };
  };

  const servers: ServerHandle[] = [];
  const roundTripsByPage: PageRoundTrips[] = [];
  try {
    const cases: Awaited<ReturnType<typeof prepare>>[] = [];
    for (const { id, kind, name } of FEED_SERVERS) {
      if (kind === 'prisma-count-feed') await prepareRelationTables(opts.serverEnv.DATABASE_URL!, world);
      // ROLE=api: an idle aggregator's polling would only add noise to a read-only benchmark.
      const server = await startServer(kind, { ...opts.serverEnv, ROLE: 'api' });
      servers.push(server);
      const pages = new Map<number, string>();
      for (const page of PAGES) pages.set(page, await checkedPage(server, name, page, world, token, reference));
      if (id === 'tally') {
        const floor = await gql(server.url, FLOOR, {}, token);
        cases.push(await prepare(server, { name: 'Tally { __typename }', server: id, query: 'floor', page: null }, floor.text));
        for (const page of ROUND_TRIP_PAGES) {
          const perRequest = await redisPerRequest(server, async () => {
            for (let i = 0; i < 10; i++) await gql(server.url, FEED, { first: page }, token);
            return 10;
          });
          roundTripsByPage.push({ page, ...perRequest! });
        }
      }
      for (const page of PAGES) cases.push(await prepare(server, { name, server: id, query: 'feed', page }, pages.get(page)!));
    }
    const timed = await timeInRounds(cases, opts.durationS, headers, false);
    const runs: FeedRun[] = cases.map((c, i) => ({ ...c.run, ...timed[i]!, redisAlone: c.redisAlone, redisLoaded: c.redisLoaded }));
    for (const r of runs) {
      const label = r.query === 'floor' ? 'floor' : `feed ${r.page}`;
      console.log(`  ${label}, ${r.name}: ${r.load.rps.toFixed(0)} req/s, p50 ${r.load.p50Ms} ms, p99 ${r.load.p99Ms} ms`);
    }
    return { runs, roundTripsByPage };
  } finally {
    for (const server of servers) await server.stop();
  }
}
