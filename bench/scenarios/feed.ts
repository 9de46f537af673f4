// Scenarios "feed" and "runtimes": tables of cases, each checked and warmed up by one `prepare`, then timed together in rounds.
import { isDeepStrictEqual } from 'node:util';
import { createFeedRelationTables } from '../baselines/prismaCountFeed.js';
import type { NodeBinary } from '../lib/env.js';
import { CONNECTIONS, gql, loadCase, redisPerRequest, timeInRounds, warmUp } from '../lib/load.js';
import { type Ratio, redisCells, type TableRow, times, versus } from '../lib/report.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';

export const PAGES = [20, 50] as const;
const ROUND_TRIP_PAGES = [1, 10, 20, 50, 100];
const feedQuery = (groups = '', state = '') => `query Feed($first: Int!) {
  feed(first: $first) {
    edges { node { id title createdAt author { id name } counts { likes favs }${groups} myState { liked faved${state} } } }
    pageInfo { hasNextPage endCursor }
  }
}`;
const QUERIES = {
  floor: { document: '{ __typename }', check: 'same body' },
  feed: { document: feedQuery(), check: 'same page' },
  groups: { document: feedQuery(' reactionGroups { content count viewerHasReacted }'), check: 'seeded groups' },
  reactions: { document: feedQuery(' reactionGroups { content count viewerHasReacted }', ' reactions bookmarked'), check: 'seeded groups' },
};
// The target's case is the page with `reactionGroups` selected; the page that also shows the
// viewer's reactions and bookmark in myState is shown beside it.
const [GROUPS, REACTIONS] = ['Tally + reactionGroups', 'Tally + reactionGroups, myState.reactions'];
type Query = keyof typeof QUERIES;

export const FEED_SERVERS = [
  { id: 'tally', kind: 'tally', name: 'Tally' },
  { id: 'a', kind: 'apollo-default-feed', name: '(a) Apollo defaults, same DataLoaders' },
  { id: 'b', kind: 'naive-feed', name: '(b) naive, no DataLoader' },
  { id: 'c', kind: 'prisma-count-feed', name: '(c) Prisma _count' },
  { id: 'd', kind: 'jit-feed', name: '(d) graphql-jit, same DataLoaders' },
] as const satisfies readonly { id: string; kind: ServerKind; name: string }[];
type ServerId = (typeof FEED_SERVERS)[number]['id'];
// Issue 8's targets: Tally's req/s over the baseline's; Redis round trips per page. Reactions: the 20-post page keeps ≥ 85 %.
const TARGETS: Partial<Record<ServerId, number>> = { a: 2.5, d: 0.8 };
const [ROUND_TRIPS_TARGET, REACTION_GROUPS_TARGET] = [2, 0.85];

type Case = { server: ServerHandle; name: string; label: string; query: Query; page: number | null };
const feedCasesOf = (server: ServerHandle, id: ServerId, name: string): Case[] => [
  ...(id === 'tally' ? [{ server, name: 'Tally { __typename }', label: 'tally floor', query: 'floor', page: null } as const] : []),
  ...PAGES.map((page) => ({ server, name, label: `${id} ${page}`, query: 'feed', page }) as const),
  ...(id === 'tally'
    ? PAGES.flatMap((page): Case[] => [
        { server, name: GROUPS, label: `tally ${page}+groups`, query: 'groups', page },
        { server, name: REACTIONS, label: `tally ${page}+groups+mine`, query: 'reactions', page },
      ])
    : []),
];

type Options = { serverEnv: Record<string, string>; world: World; durationS: number; warmupS: number };

function caseRunner({ world, warmupS }: Options) {
  const token = world.tokens.get(VIEWER_ID)!;
  const reference = new Map<string, unknown>();
  /** The body every timed answer must equal: the floor's, or the page once it is the seeded one and the first server's. */
  const expectedBody = async ({ server, name, query, page }: Case) => {
    const { data, text } = await gql(server.url, QUERIES[query].document, page === null ? {} : { first: page }, token);
    if (page === null) return text;
    const edges: { node: any }[] = data.feed.edges;
    const [ref, r] = [`${page} ${query}`, (id: number) => world.reactions.get(id)];
    const withGroups = (id: number) => ({ ...world.expected.get(id), groups: r(id)?.groups });
    const withMine = (id: number) => ({ ...withGroups(id), reactions: r(id)?.mine, bookmarked: false });
    const expected = query === 'groups' ? withGroups : query === 'reactions' ? withMine : (id: number) => world.expected.get(id);
    const seeded = edges.map(({ node: { id, counts, myState, reactionGroups: groups } }) => [
      expected(Number(id)),
      { ...counts, ...myState, ...(groups && { groups }) },
    ]);
    if (!reference.has(ref) && (edges.length !== page || !seeded.every(([e, got]) => isDeepStrictEqual(e, got))))
      throw new Error(`${name}: feed ${page} is not the seeded page: ${text}`);
    if (!reference.has(ref)) reference.set(ref, edges);
    if (!isDeepStrictEqual(edges, reference.get(ref)))
      throw new Error(`${name} and the first server answered different feed pages of ${page}`);
    return text;
  };
  const oneByOne = (server: ServerHandle, n: number, query: string, variables: Record<string, unknown>) =>
    redisPerRequest(server, async () => {
      for (let i = 0; i < n; i++) await gql(server.url, query, variables, token);
      return n;
    });
  const prepare = async (c: Case, redis: boolean) => {
    const [query, variables] = [QUERIES[c.query].document, c.page === null ? {} : { first: c.page }];
    const { url, settle } = c.server;
    const timed = { ...c, url, settle, body: JSON.stringify({ query, variables }), headers: { authorization: `Bearer ${token}` } };
    const prepared = { ...timed, expectBody: await expectedBody(c) };
    const redisAlone = redis ? await oneByOne(c.server, 20, query, variables) : null;
    await warmUp(prepared, warmupS);
    const amount = CONNECTIONS * 8;
    const loaded = async () => {
      const { failures } = await loadCase(prepared, { amount });
      if (failures > 0) throw new Error(`${c.label}: ${failures} failed requests`);
      return amount;
    };
    return { ...prepared, redisAlone, redisLoaded: redis ? await redisPerRequest(c.server, loaded) : null };
  };
  return { oneByOne, prepare };
}

type FeedRun = Awaited<ReturnType<typeof runFeedScenario>>['runs'][number];

export async function runFeedScenario(opts: Options) {
  const { oneByOne, prepare } = caseRunner(opts);
  const servers: ServerHandle[] = [];
  const roundTripsByPage = [];
  try {
    const cases = [];
    for (const { id, kind, name } of FEED_SERVERS) {
      if (kind === 'prisma-count-feed') await createFeedRelationTables(opts.serverEnv.DATABASE_URL!, opts.world.expected.values());
      const server = await startServer(kind, { ...opts.serverEnv, ROLE: 'api' });
      servers.push(server);
      for (const c of feedCasesOf(server, id, name)) cases.push({ id, ...(await prepare(c, true)) });
      for (const page of id === 'tally' ? ROUND_TRIP_PAGES : []) {
        roundTripsByPage.push({ page, ...(await oneByOne(server, 10, QUERIES.feed.document, { first: page }))! });
      }
    }
    const timed = await timeInRounds(cases, opts.durationS);
    const runs = cases.map(({ name, id, query, page, redisAlone, redisLoaded }, i) => {
      return { name, server: id, query, page, ...timed[i]!, redisAlone, redisLoaded };
    });
    return { runs, roundTripsByPage };
  } finally {
    for (const server of servers) await server.stop();
  }
}

const runOf = (runs: readonly FeedRun[], server: ServerId, page: number | null, query: Query = page === null ? 'floor' : 'feed') =>
  runs.find((r) => r.server === server && r.page === page && r.query === query)!;

export function feedRatios(runs: readonly FeedRun[], roundTripsByPage: { page: number; roundTrips: number; commands: number }[]): Ratio[] {
  const perPage = roundTripsByPage.map((r) => `${r.page}: ${r.roundTrips.toFixed(2)} RT, ${r.commands.toFixed(1)} cmds`);
  const label = `Tally Redis round trips per feed page, most over pages of ${ROUND_TRIP_PAGES.join(', ')}`;
  const detail = `${perPage.join('; ')} (one request at a time)`;
  const [value, format] = [Math.max(...roundTripsByPage.map((r) => r.roundTrips)), (x: number) => x.toFixed(2)];
  const roundTrips: Ratio = { label, value, format, target: ROUND_TRIPS_TARGET, atMost: true, detail };
  return [
    roundTrips,
    ...PAGES.flatMap((page) => {
      const [tally, groups, reactions] = [
        runOf(runs, 'tally', page).load,
        runOf(runs, 'tally', page, 'groups').load,
        runOf(runs, 'tally', page, 'reactions').load,
      ];
      return [
        ...FEED_SERVERS.slice(1).map((b) => versus(`Tally feed ${page} / ${b.name}`, tally, runOf(runs, b.id, page).load, TARGETS[b.id])),
        versus(`Tally feed ${page} / floor`, tally, runOf(runs, 'tally', null).load),
        versus(`Tally feed ${page} with reactionGroups / without`, groups, tally, page === 20 ? REACTION_GROUPS_TARGET : undefined),
        versus(`Tally feed ${page} with reactionGroups and myState { reactions bookmarked } / without`, reactions, tally),
      ];
    }),
  ];
}

export function feedRows(runs: readonly FeedRun[]): TableRow[] {
  const tally = (page: number) => runOf(runs, 'tally', page).load.rps;
  const vs = (r: FeedRun) =>
    r.page === null
      ? `${times(r.load.rps / tally(PAGES[0]))} Tally feed ${PAGES[0]}`
      : r.query !== 'feed'
        ? `${times(r.load.rps / tally(r.page))} Tally`
        : r.server === 'tally'
          ? 'reference'
          : `Tally ${times(tally(r.page) / r.load.rps)}`;
  const order = (r: FeedRun) => (r.page ?? 0) + { floor: 0, feed: 0, groups: 0.4, reactions: 0.5 }[r.query];
  return [...runs]
    .sort((a, b) => order(a) - order(b))
    .map((r) => ({
      ...{ scenario: r.page === null ? 'feed (floor)' : `feed ${r.page}`, server: r.name, ...r.load },
      ...{ ...redisCells(r.redisAlone, r.redisLoaded), check: QUERIES[r.query].check, vs: vs(r) },
    }));
}

export type RuntimeRun = Awaited<ReturnType<typeof runRuntimeScenario>>[number];

export async function runRuntimeScenario(opts: Options & { binaries: readonly NodeBinary[] }) {
  const { prepare } = caseRunner(opts);
  const servers: ServerHandle[] = [];
  try {
    for (const binary of opts.binaries) servers.push(await startServer('tally', { ...opts.serverEnv, ROLE: 'api' }, binary.path));
    const cases = [];
    for (const page of PAGES) {
      for (const [i, server] of servers.entries()) {
        const { version: node, path: binary } = opts.binaries[i]!;
        const c = { server, name: `Tally on Node ${node}`, label: `${node} ${page}`, query: 'feed', page } as const;
        cases.push({ node, binary, ...(await prepare(c, false)) });
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
      ...{ scenario: `feed ${page}`, server: `Tally, Node ${r.node}`, ...r.load, check: 'same page' },
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
