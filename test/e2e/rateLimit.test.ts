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

describe('rate limiting of relation changes', () => {
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
    const aliases = Array.from({ length: 100 }, (_, i) => `m${i}: setLikeRelation(input: { postId: "${postId}", active: ${i % 2 === 0} }) { active }`);
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
    expect(Number(/tally_rate_limited_total (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(3);
  });
});
