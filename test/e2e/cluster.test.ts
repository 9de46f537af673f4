// Tally on a real 3-master Redis Cluster (test/support/redisCluster.ts starts one): the like
// storm, the feed page's round trips, and every Lua script family through the code paths that
// use it. Keys of one entity share a hash tag, so each script touches one slot; the entities
// are spread over the masters, so a script that reached across slots would fail here.

import { Cluster } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packCounters, unpackCounters } from '../../src/counters/packedCounters.js';
import { POST_SLOTS } from '../../src/domain/counters.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { expectedFavs, expectedLikes, expectedReactionGroups, expectedViewerState, seedFeedWorld } from '../support/feedWorld.js';
import { runLiveStorm } from '../support/liveStorm.js';
import { spawnTsx } from '../support/process.js';
import { keysPerServer } from '../support/redis.js';
import { type RedisCluster, startRedisCluster } from '../support/redisCluster.js';
import { waitForPersister } from '../support/settle.js';
import { runLikeStorm } from '../support/storm.js';
import { waitFor } from '../support/wait.js';

let cluster: RedisCluster | undefined;
let t: TestApp;
const sql: string[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster();
  // The erasure list's refresh (a query every ERASURE_REFRESH_MS) must not land inside a counted page.
  t = await startTestApp(
    { REDIS_CLUSTER_NODES: cluster.nodes.join(','), ERASURE_REFRESH_MS: '600000' },
    { db: { onQuery: (q) => sql.push(q) } },
  );
  console.log(`cluster.test: Tally runs on ${cluster.label}`);
}, 60_000);
afterAll(async () => {
  try {
    await t?.stop();
  } finally {
    await cluster?.stop();
  }
});

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const FOLLOW = 'mutation($i: SetFollowRelationInput!) { setFollowRelation(input: $i) { changed } }';
const READ = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
const FEED = `query($first: Int) {
  feed(first: $first) {
    edges { node {
      id title author { id name } counts { likes favs asOf }
      reactionGroups { content count viewerHasReacted } myState { liked faved reactions bookmarked }
    } }
  }
}`;
const USER_COUNTS = 'query($id: ID!) { user(id: $id) { counts { followings followers asOf } } }';

const post = (id: string | number) => ({ type: 'post' as const, id: Number(id) });
const likesOf = async (ids: string[]) =>
  (await t.gql(READ, { ids })).data.posts as { id: string; counts: { likes: number; favs: number; asOf: string | null } }[];
/** Counts that include every change acknowledged before `since` (the asOf promise). */
const countsAfter = (ids: string[], since: number) =>
  waitFor(
    () => likesOf(ids),
    (posts) => posts.every((p) => p.counts.asOf !== null && Date.parse(p.counts.asOf) > since),
    { what: `asOf after ${since}` },
  );
const likeAll = async (postId: string, users: number[]) => {
  const results = await Promise.all(users.map(async (u) => t.gql(SET, { i: { postId, active: true } }, { token: await t.token(u) })));
  expect(results.flatMap((r) => r.errors ?? [])).toEqual([]);
};

describe('Tally on a 3-master Redis Cluster', () => {
  it('connects through ioredis Cluster, API and workers alike', () => {
    for (const redis of [t.app.redis, t.app.workers!.redis]) {
      expect(redis).toBeInstanceOf(Cluster);
      expect((redis as Cluster).nodes('master')).toHaveLength(3);
    }
  });

  it.each(['LIKE', 'FAV'] as const)('counts a %s storm exactly: 300 like (100 twice), 50 unlike', (kind) => runLikeStorm(t, kind), 60_000);
  it(
    'counts a reaction storm exactly: 300 react (100 twice), 50 take it back',
    () => runLikeStorm(t, { reaction: 'EYES' }, 20_000),
    60_000,
  );

  it(
    'pushes live counts through sharded subscriptions: 20 sockets watch 3 posts while 300 users like them',
    () => runLiveStorm(t, { sockets: 20, posts: 3, likers: 300 }),
    60_000,
  );

  it('serves a feed page of 50 posts in at most 2 Redis round trips and 2 SQL queries', async () => {
    const { viewer, postIds } = await seedFeedWorld(t, 50, { viewer: 40, authors: [41, 42, 43, 44] });
    await countsAfter(postIds, Date.now());

    await t.gql(FEED, { first: 1 }, { token: viewer }); // warm-up: every node's connection, the viewer row
    sql.length = 0;
    const before = t.app.redisRoundTrips.count;
    const res = await t.gql(FEED, { first: 50 }, { token: viewer });
    const roundTrips = t.app.redisRoundTrips.count - before;
    console.log(`cluster.test: a feed page of 50 posts cost ${roundTrips} Redis round trip(s) and ${sql.length} SQL queries`);
    expect(res.errors).toBeUndefined();
    expect(roundTrips).toBeLessThanOrEqual(2);
    expect(sql).toHaveLength(2);
    expect(res.data.feed.edges.map((e: any) => e.node.id)).toEqual([...postIds].reverse());
    for (const { node } of res.data.feed.edges) {
      const i = postIds.indexOf(node.id);
      expect(node.counts).toMatchObject({ likes: expectedLikes(i), favs: expectedFavs(i) });
      expect(node.myState).toEqual(expectedViewerState(i));
      expect(node.reactionGroups).toEqual(expectedReactionGroups(i));
      expect(node.author.name).toBe(`Author ${41 + (i % 4)}`);
    }

    // The page really read from several masters: its posts' counters are spread over them.
    const perMaster = await keysPerServer(`${t.app.config.redisKeyPrefix}cnt:`, t.app.config);
    expect(perMaster).toHaveLength(3);
    expect(perMaster.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('answers from the facts when a post’s packed counters are gone (countFromFacts); the rebuild job and the flush restore it', async () => {
    const [postId] = await t.createPosts(1, 45);
    await likeAll(postId!, [101, 102, 103]);
    expect((await countsAfter([postId!], Date.now()))[0]!.counts.likes).toBe(3);
    const countersKey = t.app.keys.counters(post(postId!));
    const likesInCounters = async () => unpackCounters(await t.app.redis.getBuffer(countersKey))?.[POST_SLOTS.like] ?? null;

    // Read path: counted from the bitmaps, and a rebuild job (acquireRebuild, rebuildCounters on BullMQ).
    await t.app.redis.del(countersKey);
    expect((await likesOf([postId!]))[0]!.counts.likes).toBe(3);
    await waitFor(likesInCounters, (n) => n === 3, { what: 'the rebuild job to restore the packed counters' });

    // Write path, no reads: the flush finds the packed counters missing and rebuilds them from the facts.
    await t.app.redis.del(countersKey);
    await likeAll(postId!, [104]);
    await waitFor(likesInCounters, (n) => n === 4, { what: 'the flush to rebuild the packed counters' });
  }, 30_000);

  it('reconciliation (inspectCounters) finds counter drift and the rebuild job repairs it', async () => {
    const ids = await t.createPosts(4, 46);
    await Promise.all(ids.map((postId, i) => likeAll(postId, [200, 201, 202, 203].slice(0, i + 1))));
    await countsAfter(ids, Date.now());
    await waitForPersister(t);

    const drifted = Number(ids[3]);
    await t.app.redis.set(t.app.keys.counters(post(drifted)), packCounters([0, 99, 0, 0, 0]));
    const report = await t.app.workers!.reconciler.run();
    expect(report.checked).toBeGreaterThanOrEqual(ids.length);
    expect(report.counterDrift).toEqual([post(drifted)]);
    expect(report.factDrift).toEqual([]);
    await waitFor(
      () => likesOf([String(drifted)]),
      ([p]) => p!.counts.likes === 4,
      { what: 'the drift repaired' },
    );
  }, 30_000);

  it('counts views of posts spread over the masters (claimViews in the viewer’s slot, addViews per partition, foldViews, takeViewSnapshots)', async () => {
    const posts = await t.createPosts(12, 49);
    const viewers = await Promise.all([601, 602, 603].map((u) => t.token(u)));
    const record = 'mutation($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }';
    for (const token of [...viewers, viewers[0]!]) {
      const res = await t.gql(record, { ids: posts }, { token });
      expect(res.errors).toBeUndefined();
    }
    const since = Date.now();
    const views = await waitFor(
      async () => (await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { views { total unique asOf } } }', { ids: posts })).data.posts,
      (rows: { views: { total: number; unique: number; asOf: string | null } }[]) =>
        rows.every((p) => p.views.asOf !== null && Date.parse(p.views.asOf) > since),
      { what: 'the views counted' },
    );
    expect(views.map((p: { views: { total: number; unique: number } }) => [p.views.total, p.views.unique])).toEqual(
      posts.map(() => [3, 3]),
    );
    const persisted = await t.app.workers!.viewSnapshots.persistPartitions(Array.from({ length: t.app.keys.partitions }, (_, p) => p));
    const rows = await t.app.db.entityView.findMany({ where: { entityType: 'post', entityId: { in: posts.map(BigInt) } } });
    expect(persisted + rows.length).toBeGreaterThanOrEqual(posts.length); // written by this call or the scheduled job before it
    expect(rows.map((r) => [Number(r.total), Number(r.viewers)])).toEqual(posts.map(() => [3, 3]));
  }, 30_000);

  it("keeps user counters from follows (setUserCounters, persistedAsOf) in the users' own slots", async () => {
    for (const id of [47, 48]) await t.gql('{ viewer { id } }', {}, { token: await t.token(id) }); // users exist once seen
    const fans = Array.from({ length: 10 }, (_, i) => 300 + i);
    const tokens = await Promise.all(fans.map((u) => t.token(u)));
    await Promise.all(tokens.map((token) => t.gql(FOLLOW, { i: { userId: '47', active: true } }, { token })));
    await Promise.all(tokens.slice(0, 2).map((token) => t.gql(FOLLOW, { i: { userId: '47', active: false } }, { token })));
    await t.gql(FOLLOW, { i: { userId: '48', active: true } }, { token: await t.token(47) });
    const lastWrite = Date.now();
    await waitForPersister(t);

    const countsOf = (id: number) =>
      waitFor(
        async () => (await t.gql(USER_COUNTS, { id: String(id) })).data.user.counts,
        (c) => c.asOf !== null && Date.parse(c.asOf) > lastWrite,
        {
          what: `user ${id}'s counters`,
        },
      );
    expect(await countsOf(47)).toMatchObject({ followers: 8, followings: 1 });
    expect(await countsOf(300)).toMatchObject({ followers: 0, followings: 0 });
    expect(await countsOf(302)).toMatchObject({ followers: 0, followings: 1 });

    const verified = await t.app.workers!.userVerifier.run();
    expect(verified.checked).toBeGreaterThan(0);
    expect(verified.counterDrift).toEqual([]);
    expect(verified.staleCache).toEqual([]);
  }, 30_000);

  it("npm run replay (switchReplayedCounters) recomputes corrupt counters and clears an interrupted run's leftovers", async () => {
    const [postId] = await t.createPosts(1, 49);
    await likeAll(postId!, [501, 502, 503, 504, 505]);
    await countsAfter([postId!], Date.now());
    const { keys } = t.app;
    const p = keys.partitionOf(post(postId!));
    // Leftovers of an interrupted replay: replay deletes them with one multi-key DEL in their slot.
    const leftovers = ['post:999998', 'post:999999'];
    await t.app.redis.sadd(keys.replayedEntities(p), ...leftovers);
    for (const entity of leftovers) await t.app.redis.hset(keys.replayedPrefix(p) + entity, String(POST_SLOTS.like), 5);
    await t.app.redis.set(keys.counters(post(postId!)), packCounters([0, 7777, 3, 0, 0]));

    const run = spawnTsx('src/cli/replay.ts', [], {
      NODE_ENV: 'test',
      DATABASE_URL: t.db.url,
      REDIS_CLUSTER_NODES: t.app.config.redisClusterNodes.join(','),
      REDIS_KEY_PREFIX: keys.prefix,
      PARTITIONS: String(keys.partitions),
    });
    expect(await run.exited, run.output()).toBe(0);
    expect(run.output()).toContain('counters switched');
    expect(await t.app.redis.exists(...leftovers.map((e) => keys.replayedPrefix(p) + e))).toBe(0);
    const [counts] = await countsAfter([postId!], Date.now());
    expect(counts!.counts).toMatchObject({ likes: 5, favs: 0 });
  }, 60_000);
});
