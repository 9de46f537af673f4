import { createHash } from 'node:crypto';
import { getOperationAST, parse } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationCost } from '../../src/graphql/cost.js';
import { createSchema } from '../../src/graphql/schema.js';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';

let dev: TestApp;
let prod: TestApp;
let postIds: string[];

beforeAll(async () => {
  dev = await startTestApp({ NODE_ENV: 'development', MAX_QUERY_COST: '400' });
  prod = await startTestApp({ NODE_ENV: 'production' }, { sharing: dev });
  postIds = await dev.createPosts(3);
});
afterAll(async () => {
  await prod.stop();
  await dev.stop();
});

const FEED = '{ feed(first: 3) { edges { node { id title } } } }';
/** After every refusal: nothing changed and the service still answers. */
async function stillHealthy(t: TestApp) {
  const res = await t.gql(FEED);
  expect(res.errors).toBeUndefined();
  expect(res.data.feed.edges.map((e: any) => e.node.id)).toEqual([...postIds].reverse());
}
const post = (t: TestApp, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${t.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

describe('limits on what a document may ask', () => {
  it('refuses queries nested deeper than MAX_QUERY_DEPTH (10)', async () => {
    const deep =
      '{ feed { edges { node { author { followers { edges { node { following { edges { node { followers { edges { node { id } } } } } } } } } } } } } }';
    const res = await dev.gql(deep);
    expect(new Set(errorCodes(res))).toEqual(new Set(['BAD_USER_INPUT']));
    expect(res.errors!.some((e) => /depth/i.test(e.message))).toBe(true);
    await stillHealthy(dev);
  });

  it('refuses more than MAX_ALIASES (100) aliases', async () => {
    const aliases = Array.from({ length: 101 }, (_, i) => `a${i}: viewer { id }`).join(' ');
    expect(errorCodes(await dev.gql(`{ ${aliases} }`))).toEqual(['BAD_USER_INPUT']);
    const fine = Array.from({ length: 100 }, (_, i) => `a${i}: viewer { id }`).join(' ');
    expect((await dev.gql(`{ ${fine} }`)).errors).toBeUndefined();
    await stillHealthy(dev);
  });

  it('refuses documents above MAX_QUERY_COST', async () => {
    const costly =
      '{ feed(first: 100) { edges { node { id title body createdAt author { id name counts { posts followers followings likesReceived favsReceived } } counts { likes favs } likers { edges { node { id name counts { posts followers } } } } } } } }';
    const res = await dev.gql(costly);
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/cost/i);
    await stillHealthy(dev);
  });

  it('costs a list by the size it will run with: a variable, or the default when `first` is left out', async () => {
    // Cost 400 at most (this app's MAX_QUERY_COST): a page of 10 costs ~328, of 20 ~650.
    const page = 'edges { node { id title counts { likes favs } } } pageInfo { hasNextPage }';
    const byVariable = `query($n: Int) { feed(first: $n) { ${page} } }`;
    expect((await dev.gql(byVariable, { n: 10 })).errors).toBeUndefined();
    // The same document again, each way round: a remembered cost is its variables' own.
    for (const res of [
      await dev.gql(byVariable, { n: 20 }),
      await dev.gql(byVariable, { n: 20 }),
      await dev.gql(`{ feed { ${page} } }`),
      await dev.gql(`{ feed(first: 20) { ${page} } }`),
    ]) {
      expect(res.status).toBe(400);
      expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
      expect(res.errors![0]!.message).toMatch(/Cost limit of 400 exceeded/);
    }
    expect((await dev.gql(byVariable, { n: 10 })).errors).toBeUndefined();
    // A variable's default counts too, and `ids` costs by how many are asked.
    expect((await dev.gql(`query($n: Int = 20) { feed(first: $n) { ${page} } }`)).status).toBe(400);
    const ids = Array.from({ length: 100 }, (_, i) => `"${i + 1}"`).join(',');
    expect(errorCodes(await dev.gql(`{ posts(ids: [${ids}]) { id title counts { likes favs } } }`))).toEqual(['BAD_USER_INPUT']);
    await stillHealthy(dev);
  });

  it('refuses documents over MAX_QUERY_BYTES (32 KiB), comments included, before parsing them', async () => {
    const commented = `#${'x'.repeat(40 * 1024)}\n{ __typename }`;
    const res = await dev.gql(commented);
    expect(res.status).toBe(400);
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/MAX_QUERY_BYTES/);
    expect((await dev.gql(`#${'x'.repeat(30 * 1024)}\n{ __typename }`)).data).toEqual({ __typename: 'Query' });
    await stillHealthy(dev);
  });

  it('refuses documents of more than MAX_QUERY_TOKENS (5000) tokens', async () => {
    const res = await dev.gql(`{ viewer { ${'id '.repeat(6000)} } }`);
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/token/i);
    await stillHealthy(dev);
  });

  it('refuses list arguments over 100 (`first`, `ids`)', async () => {
    expect(errorCodes(await dev.gql('{ feed(first: 101) { edges { cursor } } }'))).toEqual(['BAD_USER_INPUT']);
    const ids = Array.from({ length: 101 }, (_, i) => `"${i + 1}"`).join(',');
    expect(errorCodes(await dev.gql(`{ posts(ids: [${ids}]) { id } }`))).toEqual(['BAD_USER_INPUT']);
    await stillHealthy(dev);
  });

  it('refuses batched HTTP requests (an array of operations)', async () => {
    const res = await post(dev, [{ query: FEED }, { query: FEED }]);
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    await stillHealthy(dev);
  });

  it('refuses request bodies over MAX_BODY_BYTES', async () => {
    const res = await post(dev, { query: FEED, variables: { pad: 'x'.repeat(1024 * 1024) } });
    expect(res.status).toBe(413);
    await stillHealthy(dev);
  });
});

describe('the anonymous reads budget', () => {
  it('charges an expensive anonymous query its cost from its address, and refuses the whole request with 429 once spent', async () => {
    const t = await startTestApp({
      MAX_QUERY_COST: '5000',
      RATE_LIMIT_READS: '5000',
      RATE_LIMIT_READS_WINDOW_MS: '600000',
      RATE_LIMIT_READS_MIN_COST: '1000',
    });
    try {
      const query = 'query($n: Int) { feed(first: $n) { edges { node { id title counts { likes favs } } } } }';
      const document = parse(query);
      const cost = Math.ceil(operationCost(createSchema(), { document, operation: getOperationAST(document)!, variables: { n: 40 } })!);
      const fit = Math.floor(5000 / cost);
      expect(fit).toBeGreaterThanOrEqual(2);
      for (let i = 0; i < fit; i++) expect((await t.gql(query, { n: 40 })).errors).toBeUndefined();
      const res = await post(t, { query, variables: { n: 40 } });
      expect(res.status).toBe(429);
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = (await res.json()) as any;
      expect(body.data).toBeUndefined();
      expect(body.errors[0].extensions).toMatchObject({ code: 'RATE_LIMITED', retryAfterMs: expect.any(Number) });
      expect(body.errors[0].extensions.http).toBeUndefined();
      // Queries below RATE_LIMIT_READS_MIN_COST are free; a signed-in user is not charged from the address.
      expect((await t.gql(query, { n: 10 })).errors).toBeUndefined();
      expect((await t.gql(query, { n: 40 }, { token: await t.token(7) })).errors).toBeUndefined();
    } finally {
      await t.stop();
    }
  });
});

describe('production hides the schema', () => {
  it('turns introspection off', async () => {
    expect((await dev.gql('{ __schema { queryType { name } } }')).data.__schema.queryType.name).toBe('Query');
    expect(errorCodes(await prod.gql('{ __schema { queryType { name } } }'))).toEqual(['BAD_USER_INPUT']);
    await stillHealthy(prod);
  });

  it('gives no field suggestions', async () => {
    expect((await dev.gql('{ feeds { edges { cursor } } }')).errors![0]!.message).toMatch(/Did you mean/);
    const res = await prod.gql('{ feeds { edges { cursor } } }');
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).not.toMatch(/Did you mean|feed\b/);
  });
});

describe('execution timeout', () => {
  it('abandons a request that runs longer than EXECUTION_TIMEOUT_MS, and the service stays up', async () => {
    const slow = await startTestApp({ NODE_ENV: 'development', EXECUTION_TIMEOUT_MS: '1' }, { sharing: dev });
    try {
      const res = await post(slow, { query: '{ feed(first: 100) { edges { node { id author { name } counts { likes } } } } }' });
      expect(res.status).toBe(503);
      const body = (await res.json()) as any;
      expect(body.errors[0].extensions.code).toBe('INTERNAL_SERVER_ERROR');
      expect(body.errors[0].message).toMatch(/longer than 1 ms/);
      expect((await fetch(`${slow.url}/healthz`)).status).toBe(200);
    } finally {
      await slow.stop();
    }
    await stillHealthy(dev);
  });
});

describe('automatic persisted queries', () => {
  it('registers a query by its hash in Redis, then runs it from the hash alone (POST and GET)', async () => {
    const query = '{ feed(first: 1) { edges { node { id } } } }';
    const sha256Hash = createHash('sha256').update(query).digest('hex');
    const extensions = { persistedQuery: { version: 1, sha256Hash } };

    const unknown = (await (await post(dev, { extensions })).json()) as any;
    expect(unknown.errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');

    const registered = (await (await post(dev, { query, extensions })).json()) as any;
    expect(registered.data.feed.edges).toHaveLength(1);
    expect(await dev.app.redis.hget(dev.app.keys.persistedQueryDocuments(), `apq:${sha256Hash}`)).toBe(query);

    const byHash = (await (await post(prod, { extensions })).json()) as any; // another replica
    expect(byHash.data).toEqual(registered.data);
    const viaGet = await fetch(`${dev.url}/graphql?extensions=${encodeURIComponent(JSON.stringify(extensions))}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(((await viaGet.json()) as any).data).toEqual(registered.data);
  });
});

describe('the persisted query store is bounded', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      PERSISTED_QUERY_MAX_DOCUMENT_BYTES: '200',
      PERSISTED_QUERY_MAX_DOCUMENTS: '10',
      PERSISTED_QUERY_MAX_BYTES: '1024',
    });
  });
  afterAll(() => t.stop());

  const sha = (query: string) => createHash('sha256').update(query).digest('hex');
  /** Registers `query` (hash and text), then asks for it by hash alone: true when it was stored. */
  async function registerThenRecall(query: string): Promise<{ ran: boolean; stored: boolean }> {
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha(query) } };
    const registered = (await (await post(t, { query, extensions })).json()) as any;
    const recalled = (await (await post(t, { extensions })).json()) as any;
    return { ran: registered.data !== undefined, stored: recalled.errors?.[0]?.extensions?.code !== 'PERSISTED_QUERY_NOT_FOUND' };
  }
  const storeState = async () => {
    const [documents, registrations, bytes] = await Promise.all([
      t.app.redis.hgetall(t.app.keys.persistedQueryDocuments()),
      t.app.redis.zcard(t.app.keys.persistedQueryRegistrations()),
      t.app.redis.get(t.app.keys.persistedQueryBytes()),
    ]);
    const stored = Object.values(documents).reduce((n, d) => n + Buffer.byteLength(d), 0);
    return { count: Object.keys(documents).length, registrations, bytes: Number(bytes ?? 0), stored };
  };

  it('runs a document above PERSISTED_QUERY_MAX_DOCUMENT_BYTES but does not store it (a huge string literal is one token)', async () => {
    const huge = `{ post(id: "${'9'.repeat(900)}") { id } }`;
    expect(await registerThenRecall(huge)).toEqual({ ran: true, stored: false });
    expect(await registerThenRecall('{ viewer { id } }')).toEqual({ ran: true, stored: true });
  });

  it('stores nothing that does not parse or validate', async () => {
    expect(await registerThenRecall('{ viewer { nope } }')).toEqual({ ran: false, stored: false });
    expect(await registerThenRecall('{ viewer { ')).toEqual({ ran: false, stored: false });
  });

  it('keeps at most PERSISTED_QUERY_MAX_DOCUMENTS and PERSISTED_QUERY_MAX_BYTES, the least recently registered out first', async () => {
    const queries = Array.from({ length: 30 }, (_, i) => `query Q${i} { viewer { id ${'name '.repeat(i % 5)}} }`);
    for (const query of queries) expect((await registerThenRecall(query)).ran).toBe(true);
    const state = await storeState();
    expect(state.count).toBeLessThanOrEqual(10);
    expect(state.registrations).toBe(state.count);
    expect(state.bytes).toBe(state.stored); // the byte count is exact
    expect(state.bytes).toBeLessThanOrEqual(1024);
    // The newest survive, the oldest are gone.
    expect((await registerThenRecall(queries.at(-1)!)).stored).toBe(true);
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha(queries[0]!) } };
    expect(((await (await post(t, { extensions })).json()) as any).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');

    // Larger documents: the byte bound binds before the count does.
    for (let i = 0; i < 8; i++) expect((await registerThenRecall(`query Big${i} { viewer { ${'id '.repeat(55)}} }`)).stored).toBe(true);
    const big = await storeState();
    expect(big.count).toBeLessThan(10);
    expect([big.bytes, big.registrations]).toEqual([big.stored, big.count]);
    expect(big.bytes).toBeLessThanOrEqual(1024);
  });

  it('forgets a document PERSISTED_QUERY_TTL_S after its last registration', async () => {
    const query = '{ viewer { id likesPublic } }';
    expect((await registerThenRecall(query)).stored).toBe(true);
    // Seven days pass for this document.
    const key = `apq:${sha(query)}`;
    await t.app.redis.zadd(t.app.keys.persistedQueryRegistrations(), Date.now() - 8 * 24 * 3600_000, key);
    const extensions = { persistedQuery: { version: 1, sha256Hash: sha(query) } };
    expect(((await (await post(t, { extensions })).json()) as any).errors[0].extensions.code).toBe('PERSISTED_QUERY_NOT_FOUND');
    // The next registration of any document takes it out of the store.
    await registerThenRecall('{ viewer { name } }');
    expect(await t.app.redis.hexists(t.app.keys.persistedQueryDocuments(), key)).toBe(0);
    const state = await storeState();
    expect(state.bytes).toBe(state.stored);
  });
});
