import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectedFavs, expectedLikes, expectedReactionGroups, expectedViewerState, seedFeedWorld } from '../support/feedWorld.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
const sql: string[] = [];
let viewer: string;
let postIds: string[];

const FEED = `query($first: Int) {
  feed(first: $first) {
    edges { node { id title author { id name } counts { likes favs asOf } myState { liked faved } } }
  }
}`;

beforeAll(async () => {
  // The feed cache lives longer than a measured pair of pages on a loaded machine (the test forgets it itself);
  // the erasure list's refresh, a query of its own every ERASURE_REFRESH_MS, must not land inside a measured page.
  t = await startTestApp({ FEED_CACHE_TTL_MS: '60000', ERASURE_REFRESH_MS: '600000' }, { db: { onQuery: (q) => sql.push(q) } });
  ({ viewer, postIds } = await seedFeedWorld(t, 100, { viewer: 7, authors: [1, 2, 3, 4] }));
  // Three readers saw every post.
  for (const reader of [9001, 9002, 9003]) {
    const res = await t.gql(
      'mutation($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }',
      { ids: postIds },
      { token: await t.token(reader) },
    );
    expect(res.errors).toBeUndefined();
  }
  const since = Date.now();
  // Every partition's counters must cover the writes above, not just the first post's.
  await waitFor(
    () => t.gql(FEED, { first: 100 }),
    (r) => r.data.feed.edges.every((e: any) => Date.parse(e.node.counts.asOf) > since),
    { what: 'counters flushed', timeoutMs: 20_000 },
  );
}, 60_000);
afterAll(() => t.stop());

describe('a feed page with counts and viewer state', () => {
  it.each([1, 20, 50, 100])(
    'costs one Redis round trip and at most two SQL queries for %d posts, none when the page is cached',
    async (first) => {
      await t.gql(FEED, { first: 1 }, { token: viewer }); // warm-up: connections, viewer row
      const measure = async () => {
        sql.length = 0;
        const before = t.app.redisRoundTrips.count;
        const res = await t.gql(FEED, { first }, { token: viewer });
        return { res, roundTrips: t.app.redisRoundTrips.count - before, sql: sql.length };
      };
      t.app.deps.feedCache.forgetAll(); // as if the page was not read within FEED_CACHE_TTL_MS
      const fresh = await measure();
      const cached = await measure();
      expect(fresh.res.errors).toBeUndefined();
      expect(fresh.res.data.feed.edges).toHaveLength(first);
      expect(fresh.roundTrips).toBe(1);
      expect(fresh.sql).toBeGreaterThanOrEqual(1); // the page and its authors (Prisma may join them)
      expect(fresh.sql).toBeLessThanOrEqual(2);
      // Posts and authors come from the feed cache; counts and viewer state still from Redis.
      // The same page, but a flush pass may have moved asOf forward in between (never back).
      const withoutAsOf = (data: any) => data.feed.edges.map((e: any) => ({ ...e.node, counts: { ...e.node.counts, asOf: undefined } }));
      expect(withoutAsOf(cached.res.data)).toEqual(withoutAsOf(fresh.res.data));
      cached.res.data.feed.edges.forEach((e: any, k: number) => {
        expect(Date.parse(e.node.counts.asOf)).toBeGreaterThanOrEqual(Date.parse(fresh.res.data.feed.edges[k].node.counts.asOf));
      });
      expect(cached.roundTrips).toBe(1);
      expect(cached.sql).toBe(0);

      for (const { node } of fresh.res.data.feed.edges) {
        const i = postIds.indexOf(node.id);
        expect(node.counts).toMatchObject({ likes: expectedLikes(i), favs: expectedFavs(i) });
        expect(node.myState).toEqual({ liked: i % 3 === 0, faved: i % 5 === 0 });
        expect(node.author.name).toBe(`Author ${(i % 4) + 1}`);
      }
    },
  );

  it.each([1, 20, 100])(
    'costs one Redis round trip for %d posts with reactionGroups, views, the viewer’s reactions and bookmark',
    async (first) => {
      const WITH_REACTIONS = `query($first: Int) { feed(first: $first) { edges { node {
      id counts { likes favs } views { total unique } reactionGroups { content count viewerHasReacted } myState { liked faved reactions bookmarked }
    } } } }`;
      await t.gql(WITH_REACTIONS, { first: 1 }, { token: viewer });
      const before = t.app.redisRoundTrips.count;
      const res = await t.gql(WITH_REACTIONS, { first }, { token: viewer });
      expect(t.app.redisRoundTrips.count - before).toBe(1);
      expect(res.errors).toBeUndefined();
      expect(res.data.feed.edges).toHaveLength(first);
      for (const { node } of res.data.feed.edges) {
        const i = postIds.indexOf(node.id);
        expect(node.reactionGroups).toEqual(expectedReactionGroups(i));
        expect(node.views).toEqual({ total: 3, unique: 3 });
        expect(node.myState).toEqual(expectedViewerState(i));
      }
    },
  );

  it('answers a page of posts handed their counts and state as post by post, and one that shows more post by post, in one round trip', async () => {
    const FIELDS =
      'id counts { likes favs } views { total unique } reactionGroups { content count viewerHasReacted } myState { liked faved reactions bookmarked }';
    const page = await t.gql(`{ feed(first: 30) { edges { node { ${FIELDS} } } } }`, {}, { token: viewer });
    const nodes = page.data.feed.edges.map((e: any) => e.node);
    const byPost = await t.gql(
      `query($ids: [ID!]!) { posts(ids: $ids) { ${FIELDS} } }`,
      { ids: nodes.map((n: any) => n.id) },
      { token: viewer },
    );
    expect(byPost.errors).toBeUndefined();
    expect(nodes).toEqual(byPost.data.posts);
    // The authors' counts are not the page's to load: loaded with its page, they would start a second round trip.
    const before = t.app.redisRoundTrips.count;
    const withAuthors = await t.gql(
      `{ feed(first: 30) { edges { node { ${FIELDS} author { counts { posts } } } } } }`,
      {},
      { token: viewer },
    );
    expect(t.app.redisRoundTrips.count - before).toBe(1);
    expect(withAuthors.data.feed.edges.map(({ node: { author, ...node } }: any) => node)).toEqual(nodes);
    expect(withAuthors.data.feed.edges.map((e: any) => e.node.author.counts.posts)).toContain(25);
  });

  it('gives anonymous viewers counts and a null myState', async () => {
    const res = await t.gql(FEED, { first: 50 });
    expect(res.data.feed.edges.every((e: any) => e.node.myState === null && e.node.counts.asOf !== null)).toBe(true);
  });

  it('answers from the facts, never zero, when a post’s packed counters are missing or malformed (at most 2 round trips)', async () => {
    const liked = postIds.filter((_, i) => expectedLikes(i) >= 2).slice(0, 2);
    const [gone, garbled] = liked.map((id) => t.app.keys.counters({ type: 'post', id: Number(id) }));
    await t.app.redis.del(gone!);
    await t.app.redis.set(garbled!, 'not twenty bytes');

    const before = t.app.redisRoundTrips.count;
    const res = await t.gql(FEED, { first: 100 }, { token: viewer });
    expect(t.app.redisRoundTrips.count - before).toBeLessThanOrEqual(2);
    for (const id of liked) {
      const node = res.data.feed.edges.find((e: any) => e.node.id === id).node;
      expect(node.counts.likes).toBe(expectedLikes(postIds.indexOf(id)));
      expect(node.counts.asOf).not.toBeNull();
    }
  });

  it('validates a burst of likes on one post with at most one post lookup in PostgreSQL', async () => {
    const postId = postIds[99]!;
    const tokens = await Promise.all(Array.from({ length: 40 }, (_, i) => t.token(5000 + i)));
    await t.gql(FEED, { first: 1 }, { token: tokens[0] }); // create the user rows first
    await Promise.all(tokens.map((token) => t.gql(FEED, { first: 1 }, { token })));
    sql.length = 0;
    const results = await Promise.all(
      tokens.map((token) =>
        t.gql('mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }', { id: postId }, { token }),
      ),
    );
    expect(results.every((r) => r.data.setLikeRelation.changed)).toBe(true);
    expect(sql.filter((q) => /"posts"/.test(q)).length).toBeLessThanOrEqual(1);
  });
});
