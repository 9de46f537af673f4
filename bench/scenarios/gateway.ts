// Scenario "gateway": a product's page of 20 of its own entities through an Apollo Gateway, and from Tally directly.
import { isDeepStrictEqual } from 'node:util';
import { createAuth } from '../../src/auth/jwt.js';
import { waitFor } from '../../test/support/wait.js';
import { BENCH_JWT_SECRET, type BenchEnv, tallyEnv } from '../lib/env.js';
import { gql, redisPerRequest, timeInRounds, warmUp } from '../lib/load.js';
import { type Ratio, redisCells, type TableRow, times, versus } from '../lib/report.js';
import { inBatches, range, reactionGroups } from '../lib/seed.js';
import { type ServerHandle, startDeployment, startServer } from '../lib/servers.js';

const [ENTITIES, USERS, VIEWER] = [20, 40, 1];
const [TYPE, SERVICE_SECRET] = ['article', 'bench-service-0123456789abcdef0123456789'];
const [ROUND_TRIPS_TARGET, ENTITIES_TARGET] = [1, 0.9];
const FIELDS = 'id counts { likes favs } myState { liked faved reactions } reactionGroups { content count viewerHasReacted }';
const ids = range(0, ENTITIES).map((i) => `p${i}`);
const CASES = [
  { id: 'gateway', name: 'gateway: blog posts + Tally fields', via: 'gateway', query: `{ posts { title ${FIELDS} } }`, variables: {} },
  {
    id: 'direct',
    name: `Tally entities(type, ids)`,
    via: 'tally',
    query: `query($ids: [ID!]!) { entities(type: "${TYPE}", ids: $ids) { ... on Post { ${FIELDS} } } }`,
    variables: { ids },
  },
  {
    id: '_entities',
    name: 'Tally _entities, as the gateway asks',
    via: 'tally',
    query: `query($r: [_Any!]!) { _entities(representations: $r) { ... on Post { ${FIELDS} } } }`,
    variables: { r: ids.map((id) => ({ __typename: 'Post', id })) },
  },
] as const;
type CaseId = (typeof CASES)[number]['id'];

async function seed(api: ServerHandle, worker: ServerHandle) {
  const auth = createAuth(BENCH_JWT_SECRET, undefined, SERVICE_SECRET);
  const service = await auth.signService('blog');
  const e = ids.map((id) => ({ type: TYPE, id, ownerId: '1', version: '1' }));
  await gql(api.url, 'mutation($e: [EntityRegistration!]!) { registerEntities(input: { entities: $e }) { applied } }', { e }, service);
  const { reactionKinds } = (await gql<{ reactionKinds: { content: string }[] }>(api.url, '{ reactionKinds { content } }')).data;
  const kinds = reactionKinds.map((k) => k.content);
  const tokens = new Map(await Promise.all(range(1, USERS).map(async (u) => [u, await auth.sign(u)] as const)));
  const [page, writes] = [[] as unknown[], [] as { u: number; field: string }[]];
  for (const [i, id] of ids.entries()) {
    const users = range(1, USERS);
    const [likers, favers] = [users.filter((u) => (u + i) % 3 === 0), users.filter((u) => (7 * u + i) % 5 === 0)];
    const reactions = users
      .filter((u) => (u + 2 * i) % 4 === 0)
      .map((userId) => ({ userId, content: kinds[(userId + i) % kinds.length]! }));
    const { mine, groups } = reactionGroups(kinds, reactions, VIEWER);
    const myState = { liked: likers.includes(VIEWER), faved: favers.includes(VIEWER), reactions: mine };
    page.push({ id, counts: { likes: likers.length, favs: favers.length }, myState, reactionGroups: groups });
    const entity = `type: "${TYPE}", id: "${id}"`;
    writes.push(...likers.map((u) => ({ u, field: `setEntityRelation(input: { ${entity}, active: true })` })));
    writes.push(...favers.map((u) => ({ u, field: `setEntityRelation(input: { ${entity}, kind: FAV, active: true })` })));
    for (const { userId: u, content } of reactions)
      writes.push({ u, field: `setEntityReaction(input: { ${entity}, content: "${content}", active: true })` });
  }
  await inBatches(writes, 32, ({ u, field }) => gql(api.url, `mutation { ${field} { changed } }`, {}, tokens.get(u)));
  const direct = CASES[1];
  const read = async () => {
    await worker.flush();
    return (await gql(api.url, direct.query, direct.variables, tokens.get(VIEWER))).data.entities;
  };
  const options = { timeoutMs: 60_000, intervalMs: 200, what: "Tally's counts of the written truth" };
  await waitFor(read, (got) => isDeepStrictEqual(got, page), options);
  return { service, viewer: tokens.get(VIEWER)!, page };
}

export async function runGatewayScenario({ env, durationS, warmupS }: { env: BenchEnv; durationS: number; warmupS: number }) {
  const serverEnv = { ...tallyEnv(env), GRAPHQL_SCHEMA: 'subgraph', ENTITY_TYPES: `${TYPE}=Post`, SERVICE_SECRET };
  const tally = await startDeployment(serverEnv);
  let gateway: ServerHandle | null = null;
  try {
    const { service, viewer, page } = await seed(tally.api, tally.worker);
    const product = { BENCH_TALLY_URL: tally.api.url, BENCH_SERVICE_TOKEN: service, BENCH_BLOG_POSTS: String(ENTITIES) };
    gateway = await startServer('gateway', product);
    const urls = { gateway: gateway.url, tally: tally.api.url };
    const headers = { authorization: `Bearer ${viewer}` };
    const prepared = [];
    for (const c of CASES) {
      const { data, text } = await gql(urls[c.via], c.query, c.variables, viewer);
      const rows = (data.posts ?? data.entities ?? data._entities).map(({ title: _, ...row }: { title?: string }) => row);
      if (!isDeepStrictEqual(rows, page)) throw new Error(`${c.name}: not the written truth: ${text}`);
      const body = JSON.stringify({ query: c.query, variables: c.variables });
      const timed = { ...c, label: c.id, url: urls[c.via], body, headers, expectBody: text, settle: tally.api.settle };
      await warmUp(timed, warmupS);
      // The median page's round trips, one page at a time: the API's own timers (readiness, erased users) share the connection.
      const pages = [];
      for (let i = 0; i < 21; i++)
        pages.push(await redisPerRequest(tally.api, () => gql(timed.url, c.query, c.variables, viewer).then(() => 1)));
      prepared.push({ ...timed, redis: median(pages) });
    }
    const timed = await timeInRounds(prepared, durationS);
    return prepared.map(({ id, name, redis }, i) => ({ id, name, redis, ...timed[i]! }));
  } finally {
    await gateway?.stop();
    await tally.stop();
  }
}

function median(pages: Awaited<ReturnType<typeof redisPerRequest>>[]) {
  const sorted = pages.filter((p) => p !== null).sort((a, b) => a.roundTrips - b.roundTrips || a.commands - b.commands);
  return sorted[Math.floor(sorted.length / 2)] ?? null;
}

type GatewayRun = Awaited<ReturnType<typeof runGatewayScenario>>[number];
const runOf = (runs: readonly GatewayRun[], id: CaseId) => runs.find((r) => r.id === id)!;

export function gatewayRatios(runs: readonly GatewayRun[]): Ratio[] {
  const [through, direct, entities] = [runOf(runs, 'gateway'), runOf(runs, 'direct'), runOf(runs, '_entities')];
  const label = `Tally Redis round trips per gateway page of ${ENTITIES} entities`;
  const detail = `${through.redis!.commands.toFixed(1)} commands (the median of 21 pages, one at a time)`;
  const format = (x: number) => x.toFixed(2);
  return [
    { label, value: through.redis!.roundTrips, format, target: ROUND_TRIPS_TARGET, atMost: true, detail },
    versus(`gateway page of ${ENTITIES} / the same page from Tally directly`, through.load, direct.load),
    versus(`Tally _entities batch of ${ENTITIES} / entities(type, ids)`, entities.load, direct.load, ENTITIES_TARGET),
  ];
}

export const gatewayRows = (runs: readonly GatewayRun[]): TableRow[] =>
  runs.map((r) => ({
    ...{ scenario: `entities ${ENTITIES}`, server: r.name, ...r.load, ...redisCells(r.redis, null), check: 'written truth' },
    vs: r.id === 'direct' ? 'reference' : `${times(r.load.rps / runOf(runs, 'direct').load.rps)} direct`,
  }));
