// What the feed and runtime scenarios share: the feed query, the check that a server answers
// the seeded page (and the same page as the first server), and timed runs in round-robin
// rounds over servers that all run at once, so a slow patch of this shared machine hits every
// server alike instead of whichever one happened to be measured during it.
import { isDeepStrictEqual } from 'node:util';
import { combineRounds, gql, type LoadResult, runLoad } from '../lib/load.js';
import type { World } from '../lib/seed.js';
import type { ServerHandle } from '../lib/servers.js';

export const FEED_CONNECTIONS = 16;
/** Timed seconds per case are split into this many rounds. */
export const FEED_ROUNDS = 3;

export const FEED = `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs } myState { liked faved } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

export interface FeedEdge {
  node: { id: string; author: { id: string }; counts: { likes: number; favs: number }; myState: { liked: boolean; faved: boolean } };
}

/**
 * Reads `server`'s page of `page` posts and throws unless it is the seeded one and equals the
 * first page of that size in `reference` (set from the first server asked). Resolves with the
 * answer's text, which every timed response must then equal byte for byte.
 */
export async function checkedPage(
  server: ServerHandle,
  name: string,
  page: number,
  world: World,
  token: string,
  reference: Map<number, FeedEdge[]>,
) {
  const { data, text } = await gql<{ feed: { edges: FeedEdge[] } }>(server.url, FEED, { first: page }, token);
  const edges = data.feed.edges;
  if (edges.length !== page) throw new Error(`${name}: feed returned ${edges.length} posts, expected ${page}`);
  for (const { node } of edges) {
    const want = world.expected.get(Number(node.id));
    const got = { likes: node.counts.likes, favs: node.counts.favs, liked: node.myState.liked, faved: node.myState.faved };
    if (!want || !isDeepStrictEqual(got, want)) {
      throw new Error(`${name}: post ${node.id} answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
  }
  const expected = reference.get(page);
  if (!expected) reference.set(page, edges);
  else if (!isDeepStrictEqual(edges, expected)) throw new Error(`${name} and the first server answered different feed pages of ${page}`);
  return text;
}

export interface TimedCase {
  server: ServerHandle;
  /** How the round's log line names it. */
  label: string;
  body: string;
  expectBody: string;
  rounds: LoadResult[];
}

/**
 * Times every case for `durationS` in total, split into FEED_ROUNDS rounds taken round-robin
 * (every other round backwards when `alternate`: a machine that speeds up or slows down
 * during a round then favours no case). Resolves with each case's rounds combined.
 */
export async function timeInRounds(cases: TimedCase[], durationS: number, headers: Record<string, string>, alternate: boolean) {
  for (let round = 1; round <= FEED_ROUNDS; round++) {
    for (const c of alternate && round % 2 === 0 ? [...cases].reverse() : cases) {
      const options = { url: c.server.url, connections: FEED_CONNECTIONS, durationS: durationS / FEED_ROUNDS, body: c.body, headers };
      c.rounds.push(await runLoad({ ...options, expectBody: c.expectBody }));
      await c.server.settle();
    }
    console.log(`  round ${round}/${FEED_ROUNDS}: ${cases.map((c) => `${c.label} ${c.rounds.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s`);
  }
  return cases.map((c) => ({ load: combineRounds(c.rounds), rounds: c.rounds.map((r) => Number(r.rps.toFixed(1))) }));
}
