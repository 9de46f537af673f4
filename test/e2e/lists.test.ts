import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { waitForPersister } from '../support/settle.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const like = (token: string, postId: string, active = true, kind = 'LIKE') => t.gql(SET, { i: { postId, active, kind } }, { token });
const PROFILE = 'mutation($p: Boolean) { updateProfile(input: { likesPublic: $p }) { id likesPublic } }';
const LIKED = `query($id: ID!, $kind: RelationKind, $first: Int, $after: String) {
  user(id: $id) { likedPosts(kind: $kind, first: $first, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }
}`;
const LIKERS = `query($id: ID!, $kind: RelationKind, $first: Int, $after: String) {
  post(id: $id) { likers(kind: $kind, first: $first, after: $after) { edges { node { id } } pageInfo { hasNextPage endCursor } } }
}`;
const ids = (connection: any) => connection.edges.map((e: any) => e.node.id);

/** Every item of a list, page by page; fails on a repeat or on more pages than items. */
async function pageThrough(query: string, vars: Record<string, unknown>, pick: (data: any) => any, token?: string, first = 3) {
  const seen: string[] = [];
  let after: string | null = null;
  for (let pages = 0; ; pages++) {
    expect(pages).toBeLessThan(500);
    const res = await t.gql(query, { ...vars, first, after }, token ? { token } : {});
    expect(res.errors).toBeUndefined();
    const connection = pick(res.data);
    for (const id of ids(connection)) {
      expect(seen, `item ${id} repeated`).not.toContain(id);
      seen.push(id);
    }
    if (!connection.pageInfo.hasNextPage) return seen;
    after = connection.pageInfo.endCursor;
  }
}

describe('User.likedPosts and Post.likers privacy', () => {
  it('shows your own likes to you, and to others only once you make them public', async () => {
    const [owner, other] = [await t.token(201), await t.token(202)];
    const posts = await t.createPosts(3);
    for (const p of posts) await like(owner, p);
    await like(owner, posts[0]!, true, 'FAV');
    await waitForPersister(t);

    expect(ids((await t.gql(LIKED, { id: '201' }, { token: owner })).data.user.likedPosts)).toEqual([...posts].reverse());
    expect(ids((await t.gql(LIKED, { id: '201', kind: 'FAV' }, { token: owner })).data.user.likedPosts)).toEqual([posts[0]]);
    expect(errorCodes(await t.gql(LIKED, { id: '201' }, { token: other }))).toEqual(['FORBIDDEN']);
    expect(errorCodes(await t.gql(LIKED, { id: '201', kind: 'FAV' }))).toEqual(['FORBIDDEN']);

    expect((await t.gql(PROFILE, { p: true }, { token: owner })).data.updateProfile).toEqual({ id: '201', likesPublic: true });
    expect(ids((await t.gql(LIKED, { id: '201' }, { token: other })).data.user.likedPosts)).toHaveLength(3);
    expect(ids((await t.gql(LIKED, { id: '201' })).data.user.likedPosts)).toHaveLength(3);

    await t.gql(PROFILE, { p: false }, { token: owner });
    expect(errorCodes(await t.gql(LIKED, { id: '201' }, { token: other }))).toEqual(['FORBIDDEN']);
    expect(errorCodes(await t.gql(PROFILE, { p: true }))).toEqual(['UNAUTHENTICATED']);
  });

  it('leaves users with private likes out of likers, except for themselves', async () => {
    const [post] = await t.createPosts(1);
    const [pub, priv, stranger] = [await t.token(211), await t.token(212), await t.token(213)];
    await t.gql(PROFILE, { p: true }, { token: pub });
    await like(pub, post!);
    await like(priv, post!);
    await waitForPersister(t);

    expect(ids((await t.gql(LIKERS, { id: post }, { token: stranger })).data.post.likers)).toEqual(['211']);
    expect(ids((await t.gql(LIKERS, { id: post })).data.post.likers)).toEqual(['211']);
    expect(ids((await t.gql(LIKERS, { id: post }, { token: priv })).data.post.likers)).toEqual(['212', '211']);
  });
});

describe('list paging', () => {
  it('never shows deleted posts: a page holds live posts only, and ends with them', async () => {
    const author = await t.token(1);
    const reader = await t.token(221);
    const posts = await t.createPosts(5);
    for (const p of posts) await like(reader, p); // liked oldest first: newest-first order is reversed
    for (const p of posts.slice(2)) await t.gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id: p }, { token: author });
    await waitForPersister(t);

    // The three newest likes are on deleted posts: the first page skips them in the query.
    const first = (await t.gql(LIKED, { id: '221', first: 1 }, { token: reader })).data.user.likedPosts;
    expect(ids(first)).toEqual([posts[1]]);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await t.gql(LIKED, { id: '221', first: 3, after: first.pageInfo.endCursor }, { token: reader })).data.user.likedPosts;
    expect(ids(second)).toEqual([posts[0]]);
    expect(second.pageInfo.hasNextPage).toBe(false);
  });

  it('lists followers and following newest first', async () => {
    const target = await t.token(231);
    await t.gql('{ viewer { id } }', {}, { token: target });
    for (const u of [232, 233, 234]) {
      await t.gql('mutation { setFollowRelation(input: { userId: "231", active: true }) { changed } }', {}, { token: await t.token(u) });
    }
    await t.gql('mutation { setFollowRelation(input: { userId: "232", active: true }) { changed } }', {}, { token: target });
    await waitForPersister(t);
    const res = await t.gql('{ user(id: "231") { followers { edges { node { id } } } following { edges { node { id } } } } }');
    expect(ids(res.data.user.followers)).toEqual(['234', '233', '232']);
    expect(ids(res.data.user.following)).toEqual(['232']);
  });

  it('pages through likers while likes and unlikes keep arriving: no repeats, no loops', async () => {
    const [post] = await t.createPosts(1);
    const users = Array.from({ length: 60 }, (_, i) => 300 + i);
    const tokens = await Promise.all(users.map((u) => t.token(u)));
    await Promise.all(tokens.map((token) => t.gql(PROFILE, { p: true }, { token })));
    for (const token of tokens) await like(token, post!);
    await waitForPersister(t);

    let churning = true;
    const churn = (async () => {
      for (let n = 0; churning; n++) {
        const token = tokens[(n * 7) % tokens.length]!;
        await like(token, post!, false);
        await like(token, post!, true);
      }
    })();
    try {
      for (let pass = 0; pass < 3; pass++) {
        const seen = await pageThrough(LIKERS, { id: post }, (d) => d.post.likers, undefined, 7);
        expect(seen.length).toBeGreaterThan(0);
      }
    } finally {
      churning = false;
      await churn;
    }
  });

  it('refuses a cursor of another list, and page sizes over 100', async () => {
    const [a, b] = await t.createPosts(2);
    const liker = await t.token(401);
    await t.gql(PROFILE, { p: true }, { token: liker });
    await like(liker, a!);
    await like(await t.token(402), a!);
    await waitForPersister(t);
    const page = (await t.gql(LIKERS, { id: a, first: 1 }, { token: liker })).data.post.likers;
    expect(errorCodes(await t.gql(LIKERS, { id: b, after: page.pageInfo.endCursor }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql(LIKERS, { id: a, kind: 'FAV', after: page.pageInfo.endCursor }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql(LIKERS, { id: a, first: 101 }))).toEqual(['BAD_USER_INPUT']);
  });
});
