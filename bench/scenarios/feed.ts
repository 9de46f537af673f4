// Scenarios "feed" and "runtimes" (docs/performance.md, "The bench", "Node 24 against Node 20").
import { isDeepStrictEqual } from 'node:util';
import { createFeedRelationTables } from '../baselines/prismaCountFeed.js';
import { gql } from '../lib/httpPost.js';
import { combineRounds, type LoadOptions, type LoadResult, runLoad } from '../lib/load.js';
import type { NodeBinary } from '../lib/nodeBinaries.js';
import { type Ratio, type TableRow, times } from '../lib/report.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';

export const FEED_CONNECTIONS = 16;
export const FEED_ROUNDS = 3;
export const PAGES = [20, 50] as const;
const ROUND_TRIP_PAGES = [1, 10, 20, 50, 100];
const FLOOR = '{ __typename }';
const feedQuery = (groups = '', state = '') => `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs }${groups} myState { liked faved${state} } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const FEED = feedQuery();
/** The same page with the post's reaction groups and the viewer's reactions and bookmark. */
const FEED_REACTIONS = feedQuery(' reactionGroups { content count viewerHasReacted }', ' reactions bookmarked');
const REACTION_GROUPS_TARGET = 0.85; // the 20-post page keeps ≥ 85 % of its throughput with reactionGroups

export const FEED_SERVERS = [
  { id: 'tally', kind: 'tally', name: 'Tally' },
  { id: 'a', kind: 'apollo-default-feed', name: '(a) Apollo defaults, same DataLoaders' },
  { id: 'b', kind: 'naive-feed', name: '(b) naive, no DataLoader' },
  { id: 'c', kind: 'prisma-count-feed', name: '(c) Prisma _count' },
  { id: 'd', kind: 'jit-feed', name: '(d) graphql-jit, same DataLoaders' },
] as const satisfies readonly { id: string; kind: ServerKind; name: string }[];
type ServerId = (typeof FEED_SERVERS)[number]['id'];
// Issue 8's targets: Tally's req/s over the baseline's; Redis round trips per page.
const TARGETS: Partial<Record<ServerId, number>> = { a: 2.5, d: 0.8 };
const ROUND_TRIPS_TARGET = 2;

type Options = { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number };
type Case = { server: ServerHandle; label: string; body: string; expectBody: string };

/** Redis round trips and commands per request over `work` (resolving with its request count); null without Redis. */
export async function redisPerRequest(server: ServerHandle, work: () => Promise<number>) {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) return null;
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

type Redis = Awaited<ReturnType<typeof redisPerRequest>>;

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

/** Checks of a page (the seeded one, the same on every server) resolving with the body every timed answer must equal; cases prepared and timed. */
function feedCases({ world, warmupS }: Options) {
  const token = world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const reference = new Map<string, unknown>();
  const checkPage = async (server: ServerHandle, name: string, page: number, query = FEED) => {
    const { data, text } = await gql(server.url, query, { first: page }, token);
    const edges: { node: any }[] = data.feed.edges;
    const [ref, r] = [`${page}${query === FEED ? '' : ' reactions'}`, (id: number) => world.reactions.get(id)];
    const withGroups = (id: number) => ({ ...world.expected.get(id), reactions: r(id)?.mine, bookmarked: false, groups: r(id)?.groups });
    const seeded = edges.map(({ node: { id, counts, myState, reactionGroups: groups } }) => {
      return [
        query === FEED ? world.expected.get(Number(id)) : withGroups(Number(id)),
        { ...counts, ...myState, ...(groups && { groups }) },
      ];
    });
    if (!reference.has(ref) && (edges.length !== page || !seeded.every(([e, got]) => isDeepStrictEqual(e, got))))
      throw new Error(`${name}: feed ${page} is not the seeded page: ${text}`);
    if (!reference.has(ref)) reference.set(ref, edges);
    if (!isDeepStrictEqual(edges, reference.get(ref)))
      throw new Error(`${name} and the first server answered different feed pages of ${page}`);
    return text;
  };
  const load = (server: ServerHandle, body: string, more: Partial<LoadOptions>) =>
    runLoad({ url: server.url, connections: FEED_CONNECTIONS, body, headers, ...more });
  const oneByOne = (server: ServerHandle, n: number, query: string, variables: Record<string, unknown>) =>
    redisPerRequest(server, async () => {
      for (let i = 0; i < n; i++) await gql(server.url, query, variables, token);
      return n;
    });
  /** A case warmed up; with `redis`, its Redis round trips one request at a time and loaded (a fixed number of requests, all answered). */
  const prepare = async (server: ServerHandle, label: string, page: number | null, expectBody: string, redis: boolean, feed = FEED) => {
    const [query, variables] = page === null ? [FLOOR, {}] : [feed, { first: page }];
    const body = JSON.stringify({ query, variables });
    const redisAlone = redis ? await oneByOne(server, 20, query, variables) : null;
    await load(server, body, { durationS: warmupS });
    await server.settle();
    const amount = FEED_CONNECTIONS * 8;
    const redisLoaded = !redis
      ? null
      : await redisPerRequest(server, async () => {
          const { failures } = await load(server, body, { amount, expectBody });
          if (failures > 0) throw new Error(`${label}: ${failures} failed requests`);
          return amount;
        });
    const kind = page === null ? 'floor' : feed === FEED ? 'feed' : 'reactions';
    return { server, label, page, query: kind, body, expectBody, redisAlone, redisLoaded };
  };
  /** Every case for `durationS` in all, in FEED_ROUNDS round-robin rounds (every other one backwards when `alternate`). */
  const timeInRounds = async (cases: Case[], durationS: number, alternate: boolean) => {
    const rounds = cases.map((): LoadResult[] => []);
    for (let round = 1; round <= FEED_ROUNDS; round++) {
      const order = cases.map((_, i) => i);
      for (const i of alternate && round % 2 === 0 ? order.reverse() : order) {
        const { server, body, expectBody } = cases[i]!;
        rounds[i]!.push(await load(server, body, { durationS: durationS / FEED_ROUNDS, expectBody }));
        await server.settle();
      }
      console.log(
        `  round ${round}/${FEED_ROUNDS}: ${cases.map((c, i) => `${c.label} ${rounds[i]!.at(-1)!.rps.toFixed(0)}`).join(', ')} req/s`,
      );
    }
    return rounds.map((r) => ({ load: combineRounds(r), rounds: r.map((x) => Number(x.rps.toFixed(1))) }));
  };
  return { token, checkPage, oneByOne, prepare, timeInRounds };
}

type FeedResults = Awaited<ReturnType<typeof runFeedScenario>>;

export async function runFeedScenario(opts: Options) {
  const { token, checkPage, oneByOne, prepare, timeInRounds } = feedCases(opts);
  const servers: ServerHandle[] = [];
  const roundTripsByPage = [];
  try {
    const cases = [];
    for (const { id, kind, name } of FEED_SERVERS) {
      if (kind === 'prisma-count-feed') await createFeedRelationTables(opts.serverEnv.DATABASE_URL!, opts.world.expected.values());
      const server = await startServer(kind, { ...opts.serverEnv, ROLE: 'api' });
      servers.push(server);
      const pages = [];
      for (const page of PAGES) pages.push(await checkPage(server, name, page));
      if (id === 'tally') {
        const floor = await gql(server.url, FLOOR, {}, token);
        cases.push({ name: 'Tally { __typename }', id, ...(await prepare(server, 'tally floor', null, floor.text, true)) });
        for (const page of ROUND_TRIP_PAGES) roundTripsByPage.push({ page, ...(await oneByOne(server, 10, FEED, { first: page }))! });
      }
      for (const [i, page] of PAGES.entries()) cases.push({ name, id, ...(await prepare(server, `${id} ${page}`, page, pages[i]!, true)) });
      for (const page of id === 'tally' ? PAGES : []) {
        const expectBody = await checkPage(server, name, page, FEED_REACTIONS);
        const prepared = await prepare(server, `tally ${page}+groups`, page, expectBody, true, FEED_REACTIONS);
        cases.push({ name: 'Tally + reactionGroups, myState.reactions', id, ...prepared });
      }
    }
    const timed = await timeInRounds(cases, opts.durationS, false);
    const runs = cases.map(({ name, id, page, query, redisAlone, redisLoaded }, i) => {
      return { name, server: id, query, page, ...timed[i]!, redisAlone, redisLoaded };
    });
    return { runs, roundTripsByPage };
  } finally {
    for (const server of servers) await server.stop();
  }
}

const runOf = (runs: FeedResults['runs'], server: ServerId, page: number | null, query = page === null ? 'floor' : 'feed') =>
  runs.find((r) => r.server === server && r.page === page && r.query === query)!;

export function feedRatios(runs: FeedResults['runs'], roundTripsByPage: FeedResults['roundTripsByPage']): Ratio[] {
  const perPage = roundTripsByPage.map((r) => `${r.page}: ${r.roundTrips.toFixed(2)} RT, ${r.commands.toFixed(1)} cmds`);
  const roundTrips: Ratio = {
    label: `Tally Redis round trips per feed page, most over pages of ${roundTripsByPage.map((r) => r.page).join(', ')}`,
    value: Math.max(...roundTripsByPage.map((r) => r.roundTrips)),
    format: (x) => x.toFixed(2),
    target: ROUND_TRIPS_TARGET,
    atMost: true,
    detail: `${perPage.join('; ')} (one request at a time)`,
  };
  return [
    roundTrips,
    ...PAGES.flatMap((page) => {
      const [tally, reactions] = [runOf(runs, 'tally', page).load, runOf(runs, 'tally', page, 'reactions').load];
      return [
        ...FEED_SERVERS.slice(1).map((b) => versus(`Tally feed ${page} / ${b.name}`, tally, runOf(runs, b.id, page).load, TARGETS[b.id])),
        versus(`Tally feed ${page} / floor`, tally, runOf(runs, 'tally', null).load),
        // Target (20 posts): selecting reactionGroups costs the page at most 15 % of its throughput.
        versus(`Tally feed ${page} with reactionGroups / without`, reactions, tally, page === 20 ? REACTION_GROUPS_TARGET : undefined),
      ];
    }),
  ];
}

export function feedRows(runs: FeedResults['runs']): TableRow[] {
  const cells = (r: (typeof runs)[number]) => ({ server: r.name, ...r.load, ...redisCells(r.redisAlone, r.redisLoaded) });
  const floor = runOf(runs, 'tally', null);
  const first = runOf(runs, 'tally', PAGES[0]).load;
  return [
    { scenario: 'feed (floor)', ...cells(floor), check: 'same body', vs: `${times(floor.load.rps / first.rps)} Tally feed ${PAGES[0]}` },
    ...PAGES.flatMap((page) =>
      [...FEED_SERVERS.map(({ id }) => runOf(runs, id, page)), runOf(runs, 'tally', page, 'reactions')].map((r) => {
        const tally = runOf(runs, 'tally', page).load.rps;
        const ofTally = r.query === 'feed' ? 'reference' : `${times(r.load.rps / tally)} Tally`;
        const vs = r.server !== 'tally' ? `Tally ${times(tally / r.load.rps)}` : ofTally;
        return { scenario: `feed ${page}`, ...cells(r), check: r.query === 'feed' ? 'same page' : 'seeded groups', vs };
      }),
    ),
  ];
}

export type RuntimeRun = Awaited<ReturnType<typeof runRuntimeScenario>>[number];

export async function runRuntimeScenario(opts: Options & { binaries: readonly NodeBinary[] }) {
  const { checkPage, prepare, timeInRounds } = feedCases(opts);
  const servers: ServerHandle[] = [];
  try {
    for (const binary of opts.binaries) servers.push(await startServer('tally', { ...opts.serverEnv, ROLE: 'api' }, binary.path));
    const cases = [];
    for (const page of PAGES) {
      for (const [i, server] of servers.entries()) {
        const { version: node, path: binary } = opts.binaries[i]!;
        const expectBody = await checkPage(server, `Tally on Node ${node}`, page);
        cases.push({ node, binary, ...(await prepare(server, `${node} ${page}`, page, expectBody, false)) });
      }
    }
    const timed = await timeInRounds(cases, opts.durationS, true);
    return cases.map(({ node, binary, page }, i) => ({ node, binary, page, ...timed[i]! }));
  } finally {
    for (const server of servers) await server.stop();
  }
}

const byPage = (runs: readonly RuntimeRun[]) =>
  PAGES.map((page) => {
    const [reference, ...others] = runs.filter((r) => r.page === page);
    return { page, reference: reference!, others };
  });

export const runtimeRows = (runs: readonly RuntimeRun[]): TableRow[] =>
  byPage(runs).flatMap(({ page, reference, others }) =>
    [reference, ...others].map((r) => ({
      scenario: `feed ${page}`,
      server: `Tally, Node ${r.node}`,
      ...r.load,
      check: 'same page',
      vs: r === reference ? 'reference' : `${times(r.load.rps / reference.load.rps)} Node ${reference.node}`,
    })),
  );

export const runtimeRatios = (runs: readonly RuntimeRun[]): Ratio[] =>
  byPage(runs).flatMap(({ page, reference, others }) =>
    others.map((r) => {
      const rounds = r.rounds.map((x, i) => times(x / reference.rounds[i]!)).join(', ');
      return versus(`Tally feed ${page}, Node ${r.node} / Node ${reference.node}`, r.load, reference.load, undefined, `; rounds ${rounds}`);
    }),
  );
