// Scenario "feed": a page of 50 posts with counts, the viewer's state and the author, over
// HTTP with a bearer token. Tally against its own floor ({ __typename }: HTTP + auth + Apollo,
// no data) and against the naive server (no DataLoader: N+1 SQL and one Redis command per
// field). Both read the same rows and keys, and must answer the same page.
import { isDeepStrictEqual } from 'node:util';
import { runLoad, gql, type LoadResult } from '../lib/load.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import { startServer, type ServerHandle } from '../lib/servers.js';

export const PAGE = 50;
export const FEED_CONNECTIONS = 16;

const FEED = `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs } myState { liked faved } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const FLOOR = '{ __typename }';

export interface FeedRun {
  name: string;
  server: 'tally' | 'naive';
  query: 'feed' | 'floor';
  load: LoadResult;
  /** Redis per request, one request at a time (no other request can share a round trip). */
  redisAlone: RedisPerRequest;
  /** The same at full concurrency: requests issued in the same tick share a write. */
  redisLoaded: RedisPerRequest;
}

export interface RedisPerRequest {
  roundTrips: number;
  commands: number;
}

/** Stats delta per request, from the server's own Redis connection (see bench/lib/redisStats.ts). */
async function redisPerRequest(server: ServerHandle, work: () => Promise<number>): Promise<RedisPerRequest> {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) throw new Error(`${server.kind} does not report Redis stats`);
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

interface FeedEdge {
  node: { id: string; author: { id: string }; counts: { likes: number; favs: number }; myState: { liked: boolean; faved: boolean } };
}

/** Both servers must serve the same, correct page before we time them. */
function checkPage(name: string, edges: FeedEdge[], world: World) {
  if (edges.length !== PAGE) throw new Error(`${name}: feed returned ${edges.length} posts, expected ${PAGE}`);
  for (const { node } of edges) {
    const want = world.expected.get(Number(node.id));
    const got = { likes: node.counts.likes, favs: node.counts.favs, liked: node.myState.liked, faved: node.myState.faved };
    if (!want || !isDeepStrictEqual(got, { likes: want.likes, favs: want.favs, liked: want.liked, faved: want.faved })) {
      throw new Error(`${name}: post ${node.id} answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
  }
}

export async function runFeedScenario(opts: { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number }) {
  const { world } = opts;
  const token = world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const servers: ServerHandle[] = [];
  try {
    // ROLE=api: the feed is served by API processes; an idle aggregator's polling would only
    // add noise (CPU and Redis commands) to a read-only benchmark.
    const tally = await startServer('tally', { ...opts.serverEnv, ROLE: 'api' });
    servers.push(tally);
    const naive = await startServer('naive-feed', opts.serverEnv);
    servers.push(naive);

    const tallyPage = await gql<{ feed: { edges: FeedEdge[] } }>(tally.url, FEED, { first: PAGE }, token);
    const naivePage = await gql<{ feed: { edges: FeedEdge[] } }>(naive.url, FEED, { first: PAGE }, token);
    checkPage('tally', tallyPage.data.feed.edges, world);
    checkPage('naive', naivePage.data.feed.edges, world);
    if (!isDeepStrictEqual(tallyPage.data.feed.edges, naivePage.data.feed.edges)) {
      throw new Error('Tally and the naive baseline answered different feed pages');
    }

    const runs: FeedRun[] = [];
    const measure = async (name: string, server: ServerHandle, query: 'feed' | 'floor') => {
      const [document, variables] = query === 'feed' ? [FEED, { first: PAGE }] : [FLOOR, {}];
      const body = JSON.stringify({ query: document, variables });
      // Every timed response must be this one, byte for byte (the page checked above), or it is a failure.
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
        if (failures > 0) throw new Error(`${name}: ${failures} failed requests`);
        return amount;
      });
      const load = await runLoad({ url: server.url, connections: FEED_CONNECTIONS, durationS: opts.durationS, body, headers, expectBody });
      await server.settle();
      runs.push({ name, server: server.kind === 'tally' ? 'tally' : 'naive', query, load, redisAlone, redisLoaded });
      console.log(`  ${name}: ${load.rps.toFixed(0)} req/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms`);
    };

    await measure('Tally { __typename }', tally, 'floor');
    await measure('Tally', tally, 'feed');
    await measure('naive, no DataLoader', naive, 'feed');
    return runs;
  } finally {
    await Promise.all(servers.map((s) => s.stop()));
  }
}
