// What a new user of Apollo Client 4 gets against a whole Tally process: an InMemoryCache, a
// split link (subscriptions over graphql-ws, the rest over HTTP), the README's feed query
// watched, its like mutation, and pushed counts. PostViewerState, PostCounts and UserCounts
// have no identity, so by default a result that selects only some of their fields (the like's
// `myState { liked }`, a push of `counts { likes }`) replaces the cached object, the watched
// query misses fields and goes back to the network: a like costs a feed page (Apollo warns
// "Cache data may be lost when replacing the myState field of a Post object" on stderr). With
// the README's typePolicies they merge into their parent, and the like and the pushes update
// the watched queries from the cache.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ApolloClient, ApolloLink, gql, HttpLink, InMemoryCache, type TypePolicies } from '@apollo/client';
import { GraphQLWsLink } from '@apollo/client/link/subscriptions';
import { type DocumentNode, OperationTypeNode } from 'graphql';
import { createClient } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { POST } from '../../src/domain/entities.js';
import { projectPath } from '../../src/paths.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { wsUrl } from '../support/liveClient.js';
import { waitFor, waitUntil } from '../support/wait.js';

/** The cache settings the README gives: these value objects belong to their parent and merge into it. */
const README_TYPE_POLICIES: TypePolicies = {
  PostCounts: { merge: true },
  ViewCounts: { merge: true },
  PostViewerState: { merge: true },
  UserCounts: { merge: true },
};

const FEED = gql`
  query Feed {
    feed(first: 20) {
      edges {
        cursor
        node {
          id
          title
          createdAt
          author { id name }
          counts { likes favs asOf }
          myState { liked faved }
        }
      }
      pageInfo { hasNextPage endCursor }
    }
  }
`;

const LIKE = gql`
  mutation Like($postId: ID!, $key: String!) {
    setLikeRelation(input: { postId: $postId, kind: LIKE, active: true, idempotencyKey: $key }) {
      changed
      post { id myState { liked } }
    }
  }
`;

const LIVE_COUNTS = gql`
  subscription LiveCounts($ids: [ID!]!) {
    postCountsChanged(postIds: $ids) { id counts { likes favs asOf } }
  }
`;

interface FeedPost {
  id: string;
  counts: { likes: number; favs: number; asOf: string | null };
  myState: { liked: boolean; faved: boolean } | null;
}
interface FeedData {
  feed: { edges: { node: FeedPost }[] };
}
interface LikeData {
  setLikeRelation: { changed: boolean; post: { id: string; myState: { liked: boolean } } };
}
interface LiveCountsData {
  postCountsChanged: { id: string; counts: { likes: number } };
}

let t: TestApp;
let postIds: string[];

beforeAll(async () => {
  t = await startTestApp();
  postIds = await t.createPosts(4);
  // A post published moments ago may take about a second to reach the feed.
  await waitUntil(
    async () => {
      const res = await t.gql('{ feed(first: 20) { edges { node { id } } } }');
      const listed = new Set(res.data?.feed.edges.map((e: { node: { id: string } }) => e.node.id));
      return postIds.every((id) => listed.has(id));
    },
    { what: 'the posts in the feed' },
  );
});
afterAll(async () => {
  await t?.stop();
});

/** An Apollo Client as a new user would write it, counting what it sends. */
async function apolloClient(viewerId: number, typePolicies?: TypePolicies) {
  const token = await t.token(viewerId);
  /** Operation names of the HTTP requests, in order. */
  const http: string[] = [];
  /** Operation names of every operation the client sent, over either transport, in order. */
  const operations: string[] = [];
  const countingFetch: typeof fetch = async (input, init) => {
    http.push(JSON.parse(String(init?.body)).operationName);
    const headers = new Headers(init?.headers);
    headers.set('authorization', `Bearer ${token}`);
    return fetch(input, { ...init, headers });
  };
  const ws = createClient({
    url: wsUrl(t.url),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    connectionParams: { authorization: `Bearer ${token}` },
  });
  const counting = new ApolloLink((operation, forward) => {
    operations.push(operation.operationName ?? '(anonymous)');
    return forward(operation);
  });
  const client = new ApolloClient({
    cache: new InMemoryCache(typePolicies ? { typePolicies } : {}),
    link: counting.concat(
      ApolloLink.split(
        (operation) => operation.operationType === OperationTypeNode.SUBSCRIPTION,
        new GraphQLWsLink(ws),
        new HttpLink({ uri: `${t.url}/graphql`, fetch: countingFetch }),
      ),
    ),
  });
  const unsubscribes: (() => void)[] = [];

  return {
    client,
    http,
    operations,
    /** Watches a query (cache-first, the default): `latest()` is its newest complete result. */
    watch<T>(query: DocumentNode) {
      const emitted: T[] = [];
      const subscription = client.watchQuery<T>({ query }).subscribe({
        next: (result) => {
          if (result.dataState === 'complete') emitted.push(result.data as T);
        },
      });
      unsubscribes.push(() => subscription.unsubscribe());
      return { emitted, latest: () => emitted.at(-1) };
    },
    /** Subscribes through the same client (its results are written to the cache). */
    subscribe<T>(query: DocumentNode, variables: Record<string, unknown>) {
      const pushes: T[] = [];
      const subscription = client.subscribe<T>({ query, variables }).subscribe({
        next: (result) => {
          if (result.data) pushes.push(result.data as T);
        },
      });
      unsubscribes.push(() => subscription.unsubscribe());
      return pushes;
    },
    like: (postId: string) => client.mutate<LikeData>({ mutation: LIKE, variables: { postId, key: `tap-${randomUUID()}` } }),
    async stop() {
      for (const unsubscribe of unsubscribes) unsubscribe();
      client.stop();
      await ws.dispose();
    },
  };
}

type Client = Awaited<ReturnType<typeof apolloClient>>;

const openSubscriptions = async () => (await t.app.metrics.liveSubscriptions.get()).values[0]?.value ?? 0;
const listeners = async (channel: string) => {
  const [, count] = (await t.app.redis.call('PUBSUB', 'SHARDNUMSUB', channel)) as [string, number];
  return count;
};
const postChannel = (postId: string) => t.app.keys.countsChannel(t.app.keys.partitionOf({ type: POST, id: Number(postId) }));
const userChannel = (userId: number) => t.app.keys.userCountsChannel(t.app.keys.userPartitionOf(userId));

/** Runs `body` with one client, then waits until the server has ended its subscriptions. */
async function withClient(viewerId: number, typePolicies: TypePolicies | undefined, body: (c: Client) => Promise<void>) {
  const c = await apolloClient(viewerId, typePolicies);
  try {
    await body(c);
  } finally {
    await c.stop();
    await waitUntil(async () => (await openSubscriptions()) === 0, { what: 'the subscriptions ended on the server' });
  }
}

/** Until the one subscription open is listened to on its channel: a change after this is pushed. */
const subscribed = (channel: string) =>
  waitUntil(async () => (await openSubscriptions()) === 1 && (await listeners(channel)) > 0, {
    what: 'the subscription on the server',
  });

const feedPost = (feed: { latest: () => FeedData | undefined }, id: string) =>
  feed.latest()?.feed.edges.find((e) => e.node.id === id)?.node;

async function watchFeed(c: Client, postId: string) {
  const feed = c.watch<FeedData>(FEED);
  await waitFor(
    async () => feedPost(feed, postId),
    (post) => post !== undefined,
    { what: 'the first feed page' },
  );
  expect(feedPost(feed, postId)).toMatchObject({ counts: { likes: 0, favs: 0 }, myState: { liked: false, faved: false } });
  expect(c.http).toEqual(['Feed']);
  return feed;
}

/** Another user likes the post over plain HTTP. */
async function likeAs(userId: number, postId: string) {
  const res = await t.gql(
    'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
    { id: postId },
    { token: await t.token(userId) },
  );
  expect(res.data?.setLikeRelation.changed).toBe(true);
}

describe('Apollo Client 4 with InMemoryCache and GraphQLWsLink, watching the README feed', () => {
  it('default cache: the like refetches the whole feed page (Feed, Like, Feed); a push of whole counts does not', async () => {
    const postId = postIds[0]!;
    await withClient(21, undefined, async (c) => {
      const feed = await watchFeed(c, postId);

      const liked = await c.like(postId);
      expect(liked.data?.setLikeRelation).toMatchObject({ changed: true, post: { id: postId, myState: { liked: true } } });
      // The partial myState replaced the cached one; the watched feed lacks `faved` and goes back to the network.
      await waitFor(
        async () => c.http.length,
        (n) => n >= 3,
        { what: 'the feed refetched' },
      );
      await waitFor(
        async () => feedPost(feed, postId)?.myState?.liked,
        (liked) => liked === true,
        { what: 'the refetched feed' },
      );
      expect(c.http).toEqual(['Feed', 'Like', 'Feed']);
      expect(feedPost(feed, postId)?.myState).toEqual({ __typename: 'PostViewerState', liked: true, faved: false });

      // A push selecting every PostCounts field replaces the object without loss: no refetch.
      const pushes = c.subscribe<LiveCountsData>(LIVE_COUNTS, { ids: [postId] });
      await subscribed(postChannel(postId));
      await likeAs(31, postId);
      await waitFor(
        async () => feedPost(feed, postId)?.counts.likes,
        (likes) => likes === 2,
        { what: 'the pushed count in the watched feed' },
      );
      expect(pushes.at(-1)?.postCountsChanged).toMatchObject({ id: postId, counts: { likes: 2 } });
      expect(c.http).toEqual(['Feed', 'Like', 'Feed']);
      expect(c.operations).toEqual(['Feed', 'Like', 'Feed', 'LiveCounts']);
    });
  });

  it('README typePolicies: the like and a push update the watched feed from the cache (Feed, Like)', async () => {
    const postId = postIds[1]!;
    await withClient(22, README_TYPE_POLICIES, async (c) => {
      const feed = await watchFeed(c, postId);

      const liked = await c.like(postId);
      expect(liked.data?.setLikeRelation).toMatchObject({ changed: true, post: { id: postId, myState: { liked: true } } });
      await waitFor(
        async () => feedPost(feed, postId)?.myState?.liked,
        (liked) => liked === true,
        { what: 'the like in the watched feed' },
      );
      // Merged into the cached object: `faved` is kept, the feed stays complete.
      expect(feedPost(feed, postId)).toMatchObject({ counts: { likes: 0 }, myState: { liked: true, faved: false } });
      expect(c.http).toEqual(['Feed', 'Like']);

      // Live counts through the same client; another user likes the post over plain HTTP.
      const pushes = c.subscribe<LiveCountsData>(LIVE_COUNTS, { ids: [postId] });
      await subscribed(postChannel(postId));
      await likeAs(32, postId);
      await waitFor(
        async () => feedPost(feed, postId)?.counts.likes,
        (likes) => likes === 2,
        { what: 'the pushed count in the watched feed' },
      );
      expect(pushes.at(-1)?.postCountsChanged).toMatchObject({ id: postId, counts: { likes: 2 } });
      expect(feedPost(feed, postId)).toMatchObject({ counts: { likes: 2, favs: 0 }, myState: { liked: true, faved: false } });
      expect(feedPost(feed, postId)?.counts.asOf).toEqual(expect.any(String));
      // Not one more feed page: the like and the push came from the cache.
      expect(c.http).toEqual(['Feed', 'Like']);
      expect(c.operations).toEqual(['Feed', 'Like', 'LiveCounts']);
    });
  });

  // Why PostCounts and UserCounts are in the README's typePolicies too: a push (or a mutation
  // payload) that selects only some counts replaces the cached object just as `myState { liked }`
  // does, and then every such push costs the watched query a refetch.
  it.each([
    { cache: 'default cache', typePolicies: undefined, post: 2, refetches: true },
    { cache: 'README typePolicies', typePolicies: README_TYPE_POLICIES, post: 3, refetches: false },
  ])(
    '$cache: a push of `counts { likes }` alone; the feed is refetched per push: $refetches',
    async ({ typePolicies, post, refetches }) => {
      const postId = postIds[post]!;
      await withClient(23 + post, typePolicies, async (c) => {
        const feed = await watchFeed(c, postId);
        const pushes = c.subscribe<LiveCountsData>(
          gql`subscription LiveLikes($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes } } }`,
          { ids: [postId] },
        );
        await subscribed(postChannel(postId));
        await likeAs(33, postId);
        await waitFor(
          async () => [pushes.at(-1)?.postCountsChanged.counts.likes, feedPost(feed, postId)?.counts.likes],
          ([pushed, shown]) => pushed === 1 && shown === 1,
          { what: 'the pushed count in the watched feed' },
        );
        expect(feedPost(feed, postId)).toMatchObject({ counts: { likes: 1, favs: 0 }, myState: { liked: false, faved: false } });
        expect(c.http).toEqual(Array(refetches ? 1 + pushes.length : 1).fill('Feed'));
        if (refetches) expect(c.http.length).toBeGreaterThanOrEqual(2);
      });
    },
  );

  it.each([
    { cache: 'default cache', typePolicies: undefined, viewer: 41, refetches: true },
    { cache: 'README typePolicies', typePolicies: README_TYPE_POLICIES, viewer: 42, refetches: false },
  ])(
    '$cache: a push of `counts { followers }` alone; the viewer is refetched per push: $refetches',
    async ({ typePolicies, viewer, refetches }) => {
      await withClient(viewer, typePolicies, async (c) => {
        const me = c.watch<{ viewer: { id: string; counts: { followers: number; posts: number } } }>(
          gql`query Me { viewer { id name counts { followings followers posts likesReceived favsReceived asOf } } }`,
        );
        await waitFor(
          async () => me.latest()?.viewer,
          (v) => v !== undefined,
          { what: 'the viewer' },
        );
        expect(me.latest()?.viewer).toMatchObject({ id: String(viewer), counts: { followers: 0 } });
        // The first read cached the viewer's counters, which queues a push of unchanged values: one
        // or two pushes follow, each `counts { followers }` alone.
        const pushes = c.subscribe<{ userCountsChanged: { counts: { followers: number } } }>(
          gql`subscription LiveFollowers($ids: [ID!]!) { userCountsChanged(userIds: $ids) { id counts { followers } } }`,
          { ids: [String(viewer)] },
        );
        await subscribed(userChannel(viewer));
        const follow = await t.gql(
          'mutation($id: ID!) { setFollowRelation(input: { userId: $id, active: true }) { changed } }',
          { id: String(viewer) },
          { token: await t.token(43) },
        );
        expect(follow.data?.setFollowRelation.changed).toBe(true);
        await waitFor(
          async () => [pushes.at(-1)?.userCountsChanged.counts.followers, me.latest()?.viewer.counts.followers],
          ([pushed, shown]) => pushed === 1 && shown === 1,
          { what: 'the pushed count in the watched viewer' },
        );
        expect(me.latest()?.viewer.counts).toMatchObject({ followers: 1, posts: 0 });
        expect(c.http).toEqual(Array(refetches ? 1 + pushes.length : 1).fill('Me'));
      });
    },
  );
  it('README typePolicies: a reaction updates the watched README feed from the cache (Feed, React), and a push of its groups too', async () => {
    const postId = postIds[1]!;
    const readme = readFileSync(projectPath('README.md'), 'utf8');
    const [feedQuery, reactMutation] = ['query Feed {', 'mutation React {'].map((start) => {
      const from = readme.indexOf(start);
      return readme.slice(from, readme.indexOf('\n}\n', from) + 2);
    });
    await withClient(51, README_TYPE_POLICIES, async (c) => {
      const feed = c.watch<{ feed: { edges: { node: { id: string; reactionGroups: unknown[]; myState: { reactions: string[] } } }[] } }>(
        gql(feedQuery!),
      );
      const node = () => feed.latest()?.feed.edges.find((e) => e.node.id === postId)?.node;
      await waitFor(
        async () => node(),
        (n) => n !== undefined,
        { what: 'the README feed' },
      );
      const before = node()!.reactionGroups.length;
      // The README's mutation reacts to post "1"; this test's post is given instead.
      const reacted = await c.client.mutate({ mutation: gql(reactMutation!.replace('postId: "1"', `postId: "${postId}"`)) });
      expect(reacted.data).toMatchObject({ setReaction: { changed: true } });
      await waitFor(
        async () => node()?.myState.reactions,
        (r) => r?.includes('THUMBS_UP') === true,
        { what: 'the reaction in the watched feed' },
      );
      expect(node()!.reactionGroups).toContainEqual({
        __typename: 'ReactionGroup',
        content: 'THUMBS_UP',
        emoji: '👍',
        count: expect.any(Number),
        viewerHasReacted: true,
      });
      expect(c.http).toEqual(['Feed', 'React']);

      // Another user's reaction arrives as a push of the post's groups.
      const pushes = c.subscribe<{ postCountsChanged: { reactionGroups: { content: string; count: number }[] } }>(
        gql`subscription LiveReactions($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id reactionGroups { content emoji count viewerHasReacted } } }`,
        { ids: [postId] },
      );
      await subscribed(postChannel(postId));
      const other = await t.gql(
        'mutation($id: ID!) { setReaction(input: { postId: $id, content: "THUMBS_UP", active: true }) { changed } }',
        { id: postId },
        { token: await t.token(52) },
      );
      expect(other.data?.setReaction.changed).toBe(true);
      const thumbs = () => (node()!.reactionGroups as { content: string; count: number }[]).find((g) => g.content === 'THUMBS_UP');
      await waitFor(
        async () => thumbs()?.count,
        (n) => n === 2,
        { what: 'the pushed reaction count in the watched feed' },
      );
      expect(pushes.length).toBeGreaterThan(0);
      expect(node()!.reactionGroups.length).toBe(before + 1);
      expect(c.http).toEqual(['Feed', 'React']);
    });
  });
});
