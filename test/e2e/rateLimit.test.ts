import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';

// 30 changes per 60 s here: slow enough a refill (one token per 2 s) that a test's own pace
// does not top the bucket up, fast enough to see a token come back.
let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ RATE_LIMIT_CHANGES: '30', RATE_LIMIT_WINDOW_MS: '60000' });
});
afterAll(() => t.stop());

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const likedBy = async (token: string, id: string) =>
  (await t.gql('query($id: ID!) { post(id: $id) { myState { liked } } }', { id }, { token })).data.post.myState.liked;

describe('the budget of relation changes', () => {
  it('lets a burst of 30 through, then answers RATE_LIMITED with the retry delay', async () => {
    const posts = await t.createPosts(31);
    const token = await t.token(600);
    const burst = await Promise.all(posts.slice(0, 30).map((postId) => t.gql(SET, { i: { postId, active: true } }, { token })));
    expect(burst.flatMap((r) => r.errors ?? [])).toEqual([]);

    const refused = await t.gql(SET, { i: { postId: posts[30], active: true } }, { token });
    expect(errorCodes(refused)).toEqual(['RATE_LIMITED']);
    const retryAfterMs = refused.errors![0]!.extensions!.retryAfterMs as number;
    expect(retryAfterMs).toBeGreaterThan(0);
    expect(retryAfterMs).toBeLessThanOrEqual(2000);
    // The refused change did not happen, and other users have buckets of their own.
    expect(await likedBy(token, posts[30]!)).toBe(false);
    expect((await t.gql(SET, { i: { postId: posts[30], active: true } }, { token: await t.token(601) })).errors).toBeUndefined();

    // A token comes back after the delay it named.
    await new Promise((r) => setTimeout(r, retryAfterMs + 100));
    expect((await t.gql(SET, { i: { postId: posts[30], active: true } }, { token })).errors).toBeUndefined();
  });

  it('charges every aliased mutation of a document: the 31st of 100 is refused', async () => {
    const [postId] = await t.createPosts(1);
    const token = await t.token(602);
    const aliases = Array.from(
      { length: 100 },
      (_, i) => `m${i}: setLikeRelation(input: { postId: "${postId}", active: ${i % 2 === 0} }) { active }`,
    );
    const res = await t.gql(`mutation { ${aliases.join(' ')} }`, {}, { token });
    // Mutations run one after another: the first 30 ran, every later one is null with its error.
    expect(Object.values(res.data).filter((m) => m !== null)).toHaveLength(30);
    expect(res.errors!.map((e) => [e.extensions?.code, e.path![0]])).toEqual(
      Array.from({ length: 70 }, (_, i) => ['RATE_LIMITED', `m${30 + i}`]),
    );
    expect(await likedBy(token, postId!)).toBe(false); // m29, an unlike, was the last to run
    // The 30 that ran used the whole bucket.
    expect(errorCodes(await t.gql(SET, { i: { postId, active: true } }, { token }))).toEqual(['RATE_LIMITED']);
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(Number(/tally_rate_limited_total\{budget="changes"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
  });
});

describe('the budgets of writes and of list reads', () => {
  let b: TestApp;
  beforeAll(async () => {
    b = await startTestApp({
      NODE_ENV: 'production',
      RATE_LIMIT_WRITES: '10',
      RATE_LIMIT_WRITES_WINDOW_MS: '600000',
      RATE_LIMIT_LIST_PAGES: '50',
      RATE_LIMIT_LIST_PAGES_WINDOW_MS: '600000',
      TRUST_PROXY_HOPS: '1',
      // 100 posts with their likers cost ~22,000: above the default limit, and not what these tests are about.
      MAX_QUERY_COST: '50000',
      RATE_LIMIT_READS: '1000000',
    });
  });
  afterAll(() => b.stop());

  it('creates at most RATE_LIMIT_WRITES posts from 100 aliases sharing one large variable', async () => {
    const token = await b.token(700);
    const aliases = Array.from({ length: 100 }, (_, i) => `p${i}: createPost(input: { title: "t", body: $body }) { id }`);
    const res = await b.gql(`mutation($body: String!) { ${aliases.join(' ')} }`, { body: 'x'.repeat(10_000) }, { token });
    expect(Object.values(res.data).filter((p) => p !== null)).toHaveLength(10);
    expect(new Set(errorCodes(res))).toEqual(new Set(['RATE_LIMITED']));
    expect(await b.app.db.post.count({ where: { authorId: 700 } })).toBe(10);
    // Deleting and profile changes draw from the same budget, now empty.
    const del = await b.gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id: res.data.p0.id }, { token });
    expect(errorCodes(del)).toEqual(['RATE_LIMITED']);
    expect(errorCodes(await b.gql('mutation { updateProfile(input: { likesPublic: true }) { id } }', {}, { token }))).toEqual([
      'RATE_LIMITED',
    ]);
    expect(await b.app.db.post.count({ where: { authorId: 700, deletedAt: null } })).toBe(10);
  });

  it('charges an anonymous client one token per list page, by its address', async () => {
    const author = await b.token(701);
    const created = await b.gql(
      `mutation { ${Array.from({ length: 10 }, (_, i) => `p${i}: createPost(input: { title: "t", body: "b" }) { id }`).join(' ')} }`,
      {},
      { token: author },
    );
    const ids = Object.values(created.data).map((p: any) => p.id);
    const query = `query($ids: [ID!]!) { posts(ids: $ids) { id likers { edges { cursor } } } }`;
    const from = (address: string) => ({ headers: { 'x-forwarded-for': `${address}, 10.0.0.9` } });
    const pages = (res: any) => res.data.posts.filter((p: any) => p !== null).length;

    const all = Array.from({ length: 100 }, (_, i) => ids[i % 10]);
    const first = await b.gql(query, { ids: all }, { headers: { 'x-forwarded-for': '203.0.113.7' } });
    expect(pages(first)).toBe(50); // 50 pages granted, the other 50 posts are null with RATE_LIMITED
    expect(errorCodes(first)).toEqual(Array(50).fill('RATE_LIMITED'));
    expect(first.errors![0]!.extensions!.retryAfterMs).toBeGreaterThan(0);
    expect(errorCodes(await b.gql(query, { ids: ids.slice(0, 1) }, { headers: { 'x-forwarded-for': '203.0.113.7' } }))).toEqual([
      'RATE_LIMITED',
    ]);

    // Another address has a budget of its own; one address claimed by the client itself changes nothing.
    expect(pages(await b.gql(query, { ids: ids.slice(0, 3) }, { headers: { 'x-forwarded-for': '198.51.100.4' } }))).toBe(3);
    expect(errorCodes(await b.gql(query, { ids: ids.slice(0, 1) }, from('203.0.113.7')))).toEqual([]);
    // An IPv6 client is charged by its /64.
    await b.gql(query, { ids: all.slice(0, 50) }, { headers: { 'x-forwarded-for': '2001:db8:1:2::1' } });
    expect(errorCodes(await b.gql(query, { ids: ids.slice(0, 1) }, { headers: { 'x-forwarded-for': '2001:db8:1:2:ffff::9' } }))).toEqual([
      'RATE_LIMITED',
    ]);
    // A user is charged by id, not by the address they share.
    expect(pages(await b.gql(query, { ids: ids.slice(0, 2) }, { token: author, headers: { 'x-forwarded-for': '203.0.113.7' } }))).toBe(2);
  });
});
