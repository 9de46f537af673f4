import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';

let dev: TestApp;
let prod: TestApp;
let postIds: string[];

beforeAll(async () => {
  dev = await startTestApp({ MAX_QUERY_COST: '400' });
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
    const deep = '{ feed { edges { node { author { followers { edges { node { following { edges { node { followers { edges { node { id } } } } } } } } } } } } } }';
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
    const costly = '{ feed(first: 100) { edges { node { id title body createdAt author { id name counts { posts followers followings likesReceived favsReceived } } counts { likes favs } likers { edges { node { id name counts { posts followers } } } } } } } }';
    const res = await dev.gql(costly);
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toMatch(/cost/i);
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
    const slow = await startTestApp({ EXECUTION_TIMEOUT_MS: '1' }, { sharing: dev });
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
    expect(await dev.app.redis.ttl(dev.app.keys.persistedQuery(`apq:${sha256Hash}`))).toBeGreaterThan(0);

    const byHash = (await (await post(prod, { extensions })).json()) as any; // another replica
    expect(byHash.data).toEqual(registered.data);
    const viaGet = await fetch(`${dev.url}/graphql?extensions=${encodeURIComponent(JSON.stringify(extensions))}`, {
      headers: { 'apollo-require-preflight': 'true' },
    });
    expect(((await viaGet.json()) as any).data).toEqual(registered.data);
  });
});
