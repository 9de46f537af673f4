import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packCounters } from '../../src/counters/packedCounters.js';
import { createUserCounterStore } from '../../src/db/userCounters.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitForPersister } from '../support/settle.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const FOLLOW = 'mutation($i: SetFollowRelationInput!) { setFollowRelation(input: $i) { changed } }';
const USERS = `query($ids: [ID!]!) { posts(ids: $ids) { author { id counts { followings followers posts likesReceived favsReceived asOf } } } }`;
const COUNTS = 'query($id: ID!) { user(id: $id) { counts { followings followers posts likesReceived favsReceived asOf } } }';
const countsOf = async (id: number) => (await t.gql(COUNTS, { id: String(id) })).data.user.counts;
const FIELDS = ['followings', 'followers', 'posts', 'likesReceived', 'favsReceived'] as const;
const pick = (c: Record<string, number>) => Object.fromEntries(FIELDS.map((f) => [f, c[f]]));

describe('user counters', () => {
  it('are exact under concurrent follows, likes and post deletions from many users', async () => {
    const authors = [11, 12, 13, 14];
    const posts = new Map<number, string[]>();
    for (const a of authors) posts.set(a, await t.createPosts(3, a));
    const fans = Array.from({ length: 60 }, (_, i) => 500 + i);
    const tokens = await Promise.all(fans.map((u) => t.token(u)));

    await Promise.all(
      fans.flatMap((_, i) => {
        const token = tokens[i]!;
        const author = authors[i % 4]!;
        const [p1, p2] = posts.get(author)!;
        return [
          t.gql(FOLLOW, { i: { userId: String(author), active: true } }, { token }),
          t.gql(SET, { i: { postId: p1, active: true } }, { token }),
          t.gql(SET, { i: { postId: p2, active: true, kind: 'FAV' } }, { token }),
          ...(i % 3 === 0 ? [t.gql(FOLLOW, { i: { userId: String(authors[(i + 1) % 4]), active: true } }, { token })] : []),
        ];
      }),
    );
    // Some change their minds; one author deletes a post.
    await Promise.all(
      fans.slice(0, 12).map((_, i) => t.gql(FOLLOW, { i: { userId: String(authors[i % 4]), active: false } }, { token: tokens[i] })),
    );
    await Promise.all(
      fans
        .slice(12, 20)
        .map((_, i) => t.gql(SET, { i: { postId: posts.get(authors[(12 + i) % 4]!)![0], active: false } }, { token: tokens[12 + i] })),
    );
    await t.gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id: posts.get(14)![2] }, { token: await t.token(14) });
    const lastWrite = Date.now();
    await waitForPersister(t);

    const expected = await createUserCounterStore(t.app.db).fromBaseTables([...authors, ...fans]);
    for (const id of [...authors, ...fans]) {
      const counts = await waitFor(
        () => countsOf(id),
        (c) => c.asOf !== null && Date.parse(c.asOf) > lastWrite,
        { what: `user ${id}` },
      );
      expect({ id, ...pick(counts) }).toEqual({ id, ...expected.get(id) });
    }
    expect(pick(await countsOf(14))).toMatchObject({ posts: 2, followers: 15 - 3 + 5 });
  }, 60_000);

  it('load for a whole page of users in one Redis round trip', async () => {
    const ids = await t.createPosts(4, 21);
    for (const a of [22, 23, 24]) ids.push(...(await t.createPosts(1, a)));
    await t.gql(USERS, { ids }); // first read fills the cache
    const before = t.app.redisRoundTrips.count;
    const res = await t.gql(USERS, { ids });
    expect(res.data.posts.map((p: any) => p.author.counts.posts)).toEqual([4, 4, 4, 4, 1, 1, 1]);
    expect(t.app.redisRoundTrips.count - before).toBe(1);
  });

  it('verifier repairs drifted stored counters and a stale cache', async () => {
    await t.createPosts(2, 31);
    await t.createPosts(1, 32);
    await t.gql(FOLLOW, { i: { userId: '31', active: true } }, { token: await t.token(32) });
    await waitForPersister(t);
    await countsOf(31);
    await countsOf(32);

    // PostgreSQL's row for 31 drifts; Redis' cache for 32 holds wrong numbers at its version.
    await t.app.db.$executeRaw`UPDATE user_counters SET followers = 99 WHERE user_id = 31`;
    await t.app.redis.set(t.app.keys.userCounters(32), packCounters([7, 7, 7, 7, 7]));

    const report = await t.app.workers!.userVerifier.run();
    expect(report.counterDrift).toContain(31);
    expect(report.staleCache).toContain(32);
    await waitFor(
      () => countsOf(31),
      (c) => c.followers === 1 && c.posts === 2,
      { what: 'user 31 rebuilt' },
    );
    expect(pick(await countsOf(32))).toEqual({ followings: 1, followers: 0, posts: 1, likesReceived: 0, favsReceived: 0 });
  });
});
