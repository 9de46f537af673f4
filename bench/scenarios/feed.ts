// Scenario "feed": pages of 20 and 50 posts with counts, the viewer's state and the author,
// over HTTP with the same bearer token, from Tally and four baselines that read the same
// seeded data: (a) Tally's schema, resolvers and DataLoaders in Apollo Server with its
// defaults, (b) a naive server without DataLoader, (c) Prisma relation counts, (d) Tally's
// schema, resolvers and DataLoaders run by graphql-jit on plain node:http. Plus Tally's floor
// ({ __typename }: HTTP + auth + Apollo, no data). Every server must answer the same, correct
// page before it is timed.
import { isDeepStrictEqual } from 'node:util';
import { createFeedRelationTables } from '../baselines/prismaCountFeed.js';
import { combineRounds, gql, type LoadResult, runLoad } from '../lib/load.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';

export const PAGES = [20, 50] as const;
export const FEED_CONNECTIONS = 16;
/** Timed seconds per case are split into this many rounds, taken round-robin over the servers. */
export const FEED_ROUNDS = 3;
/** Page sizes whose Redis round trips per request are counted on Tally (one request at a time). */
export const ROUND_TRIP_PAGES = [1, 10, 20, 50, 100] as const;

export interface PageRoundTrips extends RedisPerRequest {
  page: number;
}

/** The feed's servers, in the order they are measured (Tally first: its pages are the reference). */
export const FEED_SERVERS = [
  { id: 'tally', kind: 'tally', name: 'Tally' },
  { id: 'a', kind: 'apollo-default-feed', name: '(a) Apollo defaults, same DataLoaders' },
  { id: 'b', kind: 'naive-feed', name: '(b) naive, no DataLoader' },
  { id: 'c', kind: 'prisma-count-feed', name: '(c) Prisma _count' },
  { id: 'd', kind: 'jit-feed', name: '(d) graphql-jit, same DataLoaders' },
] as const satisfies readonly { id: string; kind: ServerKind; name: string }[];

export type FeedServerId = (typeof FEED_SERVERS)[number]['id'];

export const FEED = `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs } myState { liked faved } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const FLOOR = '{ __typename }';

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
  /** Redis per request, one request at a time (no other request can share a round trip); null without Redis. */
  redisAlone: RedisPerRequest | null;
  /** The same at full concurrency: requests issued in the same tick share a write. */
  redisLoaded: RedisPerRequest | null;
}

export interface RedisPerRequest {
  roundTrips: number;
  commands: number;
}

/** Stats delta per request, from the server's own Redis connection (see bench/lib/redisStats.ts). */
async function redisPerRequest(server: ServerHandle, work: () => Promise<number>): Promise<RedisPerRequest | null> {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) return null;
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

export interface FeedEdge {
  node: { id: string; author: { id: string }; counts: { likes: number; favs: number }; myState: { liked: boolean; faved: boolean } };
}

/** Every server must serve the same, correct page before we time it. */
export function checkPage(name: string, page: number, edges: FeedEdge[], world: World) {
  if (edges.length !== page) throw new Error(`${name}: feed returned ${edges.length} posts, expected ${page}`);
  for (const { node } of edges) {
    const want = world.expected.get(Number(node.id));
    const got = { likes: node.counts.likes, favs: node.counts.favs, liked: node.myState.liked, faved: node.myState.faved };
    if (!want || !isDeepStrictEqual(got, { likes: want.likes, favs: want.favs, liked: want.liked, faved: want.faved })) {
      throw new Error(`${name}: post ${node.id} answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
  }
}

/** The prisma-count baseline's like and fav rows, checked against the seeded world. */
async function prepareRelationTables(databaseUrl: string, world: World) {
  const rows = await createFeedRelationTables(databaseUrl);
  const seeded = [...world.expected.values()].reduce((n, e) => ({ likes: n.likes + e.likes, favs: n.favs + e.favs }), {
    likes: 0,
    favs: 0,
  });
  if (!isDeepStrictEqual(rows, seeded)) {
    throw new Error(`the relation facts hold ${JSON.stringify(rows)} likes and favs, the seed wrote ${JSON.stringify(seeded)}`);
  }
}

export async function runFeedScenario(opts: { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number }) {
  const { world } = opts;
  const token = world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const runs: FeedRun[] = [];
  // Tally's edges per page size: every other server must answer exactly these.
  const reference = new Map<number, FeedEdge[]>();

  interface Case {
    server: ServerHandle;
    run: Pick<FeedRun, 'name' | 'server' | 'query' | 'page'>;
    body: string;
    expectBody: string;
    redisAlone: RedisPerRequest | null;
    redisLoaded: RedisPerRequest | null;
    rounds: LoadResult[];
  }

  /** Not timed: the expected body, Redis per request alone and under load, and a warm-up. */
  const prepare = async (server: ServerHandle, run: Case['run']): Promise<Case> => {
    const [document, variables] = run.query === 'feed' ? [FEED, { first: run.page }] : [FLOOR, {}];
    const body = JSON.stringify({ query: document, variables });
    // Every timed response must be this one, byte for byte (the page checked before), or it is a failure.
    const { text: expectBody } = await gql(server.url, document, variables, token);
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
    return { server, run, body, expectBody, redisAlone, redisLoaded, rounds: [] };
  };

  // Every server runs at once (idle but for its turn), and the timed runs go round-robin in
  // ROUNDS short rounds: a slow patch of this shared machine then hits every server alike
  // instead of whichever one happened to be measured during it.
  const servers: ServerHandle[] = [];
  const roundTripsByPage: PageRoundTrips[] = [];
  try {
    const cases: Case[] = [];
    for (const { id, kind, name } of FEED_SERVERS) {
      if (kind === 'prisma-count-feed') await prepareRelationTables(opts.serverEnv.DATABASE_URL!, world);
      // ROLE=api: the feed is served by API processes; an idle aggregator's polling would only
      // add noise (CPU and Redis commands) to a read-only benchmark.
      const server = await startServer(kind, { ...opts.serverEnv, ROLE: 'api' });
      servers.push(server);
      for (const page of PAGES) {
        const { data } = await gql<{ feed: { edges: FeedEdge[] } }>(server.url, FEED, { first: page }, token);
        checkPage(name, page, data.feed.edges, world);
        const expected = reference.get(page);
        if (!expected) reference.set(page, data.feed.edges);
        else if (!isDeepStrictEqual(data.feed.edges, expected))
          throw new Error(`${name} and Tally answered different feed pages of ${page}`);
      }
      if (id === 'tally') {
        cases.push(await prepare(server, { name: 'Tally { __typename }', server: id, query: 'floor', page: null }));
        for (const page of ROUND_TRIP_PAGES) {
          const perRequest = await redisPerRequest(server, async () => {
            for (let i = 0; i < 10; i++) await gql(server.url, FEED, { first: page }, token);
            return 10;
          });
          roundTripsByPage.push({ page, ...perRequest! });
        }
      }
      for (const page of PAGES) cases.push(await prepare(server, { name, server: id, query: 'feed', page }));
    }
    const roundS = opts.durationS / FEED_ROUNDS;
    for (let round = 1; round <= FEED_ROUNDS; round++) {
      for (const c of cases) {
        c.rounds.push(
          await runLoad({
            url: c.server.url,
            connections: FEED_CONNECTIONS,
            durationS: roundS,
            body: c.body,
            headers,
            expectBody: c.expectBody,
          }),
        );
        await c.server.settle();
      }
      console.log(
        `  round ${round}/${FEED_ROUNDS}: ${cases.map((c) => `${c.run.server} ${c.run.page ?? 'floor'} ${c.rounds.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s`,
      );
    }
    for (const c of cases) {
      const load = combineRounds(c.rounds);
      runs.push({
        ...c.run,
        load,
        rounds: c.rounds.map((r) => Number(r.rps.toFixed(1))),
        redisAlone: c.redisAlone,
        redisLoaded: c.redisLoaded,
      });
      const label = c.run.query === 'floor' ? 'floor' : `feed ${c.run.page}`;
      console.log(`  ${label}, ${c.run.name}: ${load.rps.toFixed(0)} req/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms`);
    }
  } finally {
    for (const server of servers) await server.stop();
  }
  return { runs, roundTripsByPage };
}
