// What the feed, runtime and hot-post scenarios share: the feed query and the check that a
// server answers the seeded page, timed runs in round-robin rounds (docs/performance.md,
// "The bench"), Redis per request, and their lines of the bench's table.
import { isDeepStrictEqual } from 'node:util';
import { combineRounds, gql, type LoadResult, runLoad } from '../lib/load.js';
import type { Ratio } from '../lib/report.js';
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

type Edge = { node: { id: string; counts: { likes: number; favs: number }; myState: { liked: boolean; faved: boolean } } };

/**
 * A check of a server's page of `page` posts: it must be the seeded one and equal the first
 * server's page of that size. Resolves with the answer's text, which every timed response must equal.
 */
export function pageChecker(world: World, token: string) {
  const reference = new Map<number, Edge[]>();
  return async (server: ServerHandle, name: string, page: number) => {
    const { data, text } = await gql<{ feed: { edges: Edge[] } }>(server.url, FEED, { first: page }, token);
    const edges = data.feed.edges;
    if (edges.length !== page) throw new Error(`${name}: feed returned ${edges.length} posts, expected ${page}`);
    for (const { node } of edges) {
      const want = world.expected.get(Number(node.id));
      const got = { ...node.counts, ...node.myState };
      if (!isDeepStrictEqual(got, want))
        throw new Error(`${name}: post ${node.id} answered ${JSON.stringify(got)}, expected ${JSON.stringify(want)}`);
    }
    if (!reference.has(page)) reference.set(page, edges);
    if (!isDeepStrictEqual(edges, reference.get(page)))
      throw new Error(`${name} and the first server answered different feed pages of ${page}`);
    return text;
  };
}

/** Redis round trips and commands per request over `work` (resolving with its request count); null without Redis. */
export async function redisPerRequest(server: ServerHandle, work: () => Promise<number>) {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) return null;
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

/** Not timed: lets V8 optimise the hot path, then waits for the server to go quiet. */
export async function warmUp(server: ServerHandle, body: string, headers: Record<string, string>, durationS: number) {
  await runLoad({ url: server.url, connections: FEED_CONNECTIONS, durationS, body, headers });
  await server.settle();
}

export type TimedCase = { server: ServerHandle; label: string; body: string; expectBody: string };

/**
 * Times every case for `durationS` in all, in FEED_ROUNDS rounds taken round-robin (every
 * other round backwards when `alternate`); resolves with each case's rounds combined.
 */
export async function timeInRounds(cases: TimedCase[], durationS: number, headers: Record<string, string>, alternate: boolean) {
  const rounds = cases.map((): LoadResult[] => []);
  for (let round = 1; round <= FEED_ROUNDS; round++) {
    const order = cases.map((_, i) => i);
    for (const i of alternate && round % 2 === 0 ? order.reverse() : order) {
      const { server, body, expectBody } = cases[i]!;
      rounds[i]!.push(
        await runLoad({ url: server.url, connections: FEED_CONNECTIONS, durationS: durationS / FEED_ROUNDS, body, headers, expectBody }),
      );
      await server.settle();
    }
    console.log(
      `  round ${round}/${FEED_ROUNDS}: ${cases.map((c, i) => `${c.label} ${rounds[i]!.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s`,
    );
  }
  return rounds.map((r) => ({ load: combineRounds(r), rounds: r.map((x) => Number(x.rps.toFixed(1))) }));
}

type Redis = { roundTrips: number; commands: number } | null;

/** A table row's Redis columns. */
export const redisCells = (alone: Redis, loaded: Redis) => ({
  ...(alone && { rtAlone: alone.roundTrips }),
  ...(loaded && { rtLoaded: loaded.roundTrips, commands: loaded.commands }),
});

/** `run`'s throughput over `base`'s, with both p99s. */
export const versus = (label: string, run: LoadResult, base: LoadResult, target?: number, extra = ''): Ratio => ({
  label,
  value: run.rps / base.rps,
  detail: `req/s; p99 ${run.p99Ms} ms vs ${base.p99Ms} ms${extra}`,
  ...(target !== undefined && { target }),
});
