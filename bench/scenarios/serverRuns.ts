// What the feed, runtime and hot-post scenarios share (docs/performance.md, "The bench"): the feed
// query and its check, timed round-robin rounds, Redis per request, and their table cells.
import { isDeepStrictEqual } from 'node:util';
import { combineRounds, gql, type LoadResult, runLoad } from '../lib/load.js';
import type { Ratio } from '../lib/report.js';
import type { World } from '../lib/seed.js';
import type { ServerHandle } from '../lib/servers.js';

export const FEED_CONNECTIONS = 16;
export const FEED_ROUNDS = 3; // the timed seconds of a case are split into this many rounds

export const FEED = `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs } myState { liked faved } } }
    pageInfo { hasNextPage endCursor }
  }
}`;

/**
 * A check of a server's page of `page` posts: the first server's must be the seeded one, every
 * other's the same. Resolves with the answer's text, which every timed response must then equal.
 */
export function pageChecker(world: World, token: string) {
  const reference = new Map<number, unknown>();
  return async (server: ServerHandle, name: string, page: number) => {
    const { data, text } = await gql(server.url, FEED, { first: page }, token);
    const edges: { node: any }[] = data.feed.edges;
    if (!reference.has(page)) {
      const answered = edges.map(({ node }) => [Number(node.id), { ...node.counts, ...node.myState }]);
      const seeded = answered.map(([id]) => [id, world.expected.get(id)]);
      if (edges.length !== page || !isDeepStrictEqual(answered, seeded))
        throw new Error(`${name}: feed ${page} is not the seeded page: ${text}`);
      reference.set(page, edges);
    }
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
