// Tally as a Federation 2 subgraph of a product's graph: an Apollo Gateway composes it with the
// product's own subgraph (posts, comments, users), and clients query one graph.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { type BlogComment, type BlogPost, startBlogSubgraph } from '../support/blogSubgraph.js';
import { startGateway } from '../support/gateway.js';
import { connectLive, type LiveClient, onServer, refusalCodes } from '../support/liveClient.js';
import { waitFor, waitUntil } from '../support/wait.js';

// The registry is built from the process's settings at import: set them before anything loads it.
vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'article=Post;comment:like,reactions';
});
const SERVICE_SECRET = 'service-secret-0123456789abcdef0123456789';

const posts: BlogPost[] = Array.from({ length: 20 }, (_, i) => ({ id: `p${i}`, title: `post ${i}`, authorId: String(100 + (i % 3)) }));
const comments: BlogComment[] = posts.flatMap((post, i) =>
  [0, 1].map((j) => ({ id: `${post.id}-c${j}`, postId: post.id, body: `comment ${j} on ${i}`, authorId: String(110 + j) })),
);

let tally: TestApp;
let blog: Awaited<ReturnType<typeof startBlogSubgraph>>;
let gateway: Awaited<ReturnType<typeof startGateway>>;
// A second replica of the same deployment, on the other executor, behind a gateway of its own.
let replica: TestApp;
let gatewayJs: Awaited<ReturnType<typeof startGateway>>;
let service: string;
beforeAll(async () => {
  tally = await startTestApp({ ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET, GRAPHQL_SCHEMA: 'subgraph' });
  service = await tally.app.deps.auth.signService('blog');
  blog = await startBlogSubgraph(posts, comments);
  gateway = await startGateway(
    [
      { name: 'blog', url: blog.url },
      { name: 'tally', url: `${tally.url}/graphql` },
    ],
    service,
  );
  replica = await startTestApp(
    { ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET, GRAPHQL_SCHEMA: 'subgraph', GRAPHQL_EXECUTOR: 'graphql-js' },
    { sharing: tally },
  );
  gatewayJs = await startGateway(
    [
      { name: 'blog', url: blog.url },
      { name: 'tally', url: `${replica.url}/graphql` },
    ],
    service,
  );
  // The product's service registers what it owns (through the gateway: mutations pass it).
  const registered = await gateway.gql(
    `mutation($entities: [EntityRegistration!]!) { registerEntities(input: { entities: $entities }) { applied } }`,
    {
      entities: [
        ...posts.map((p) => ({ type: 'article', id: p.id, ownerId: p.authorId, version: '1' })),
        ...comments.map((c) => ({ type: 'comment', id: c.id, ownerId: c.authorId, version: '1' })),
      ],
    },
    service,
  );
  expect(registered.errors).toBeUndefined();
  expect(registered.data.registerEntities.applied).toBe(posts.length + comments.length);
});
const clients: LiveClient[] = [];
afterAll(async () => {
  await Promise.all(clients.map((client) => client.dispose()));
  await gatewayJs?.stop();
  await replica?.stop();
  await gateway?.stop();
  await blog?.stop();
  await tally?.stop();
});

const FEED = `query {
  posts {
    id title author { handle counts { likesReceived } }
    counts { likes } myState { liked reactions }
    reactionGroups { content count viewerHasReacted }
    comments { id body counts { likes } myState { liked } }
  }
}`;

describe('Tally behind a gateway', () => {
  it("answers a feed query with the owner's fields and Tally's counts, viewer state and reactions, exact", async () => {
    const users = await Promise.all([1, 2, 3].map((id) => tally.token(id)));
    // Each user likes every third post and reacts to it, and likes the first comment of each post.
    await Promise.all(
      users.map((token, u) =>
        gateway.gql(
          `mutation { ${posts
            .filter((_, i) => i % 3 === u)
            .map(
              (p, i) => `l${i}: setEntityRelation(input: { type: "article", id: "${p.id}", active: true }) { changed }
                r${i}: setEntityReaction(input: { type: "article", id: "${p.id}", content: "ROCKET", active: true }) { changed }`,
            )
            .join(
              '\n',
            )} ${posts.map((p, i) => `c${i}: setEntityRelation(input: { type: "comment", id: "${p.id}-c0", active: true }) { changed }`).join('\n')} }`,
          {},
          token,
        ),
      ),
    ).then((answers) => {
      for (const answer of answers) expect(answer.errors).toBeUndefined();
    });

    const viewer = users[0]!;
    const expected = posts.map((post, i) => ({
      id: post.id,
      title: post.title,
      counts: { likes: 1 },
      myState: { liked: i % 3 === 0, reactions: i % 3 === 0 ? ['ROCKET'] : [] },
      reactionGroups: [{ content: 'ROCKET', count: 1, viewerHasReacted: i % 3 === 0 }],
      comments: [
        { id: `${post.id}-c0`, body: `comment 0 on ${i}`, counts: { likes: 3 }, myState: { liked: true } },
        { id: `${post.id}-c1`, body: `comment 1 on ${i}`, counts: { likes: 0 }, myState: { liked: false } },
      ],
    }));
    type Row = (typeof expected)[number] & { author: { handle: string; counts: { likesReceived: number } } };
    const page = await waitFor(
      async (): Promise<Row[]> => {
        const res = await gateway.gql(FEED, {}, viewer);
        expect(res.errors).toBeUndefined();
        return res.data.posts;
      },
      // Every count checked below, the authors' too: each author's counters move on their own.
      (rows) =>
        rows.every((row) => row.counts.likes === 1 && row.comments[0]!.counts.likes === 3) &&
        rows.slice(0, 3).every((row, i) => row.author.counts.likesReceived === [7, 7, 6][i]),
    );
    expect(page.map(({ author, ...rest }) => rest)).toEqual(expected);
    // The other replica, on graphql-js, answers the same page.
    expect((await gatewayJs.gql(FEED, {}, viewer)).data.posts).toEqual(page);
    // An author's counters: their posts' likes (7, 7 and 6 of the 20 posts, one like each).
    expect(page.slice(0, 3).map((row) => row.author)).toEqual([
      { handle: 'user-100', counts: { likesReceived: 7 } },
      { handle: 'user-101', counts: { likesReceived: 7 } },
      { handle: 'user-102', counts: { likesReceived: 6 } },
    ]);
  });

  it("costs Tally one Redis round trip for a page of 20 entities (each of the gateway's fetches is one batch)", async () => {
    const viewer = await tally.token(1);
    const query = `query { posts { title counts { likes favs } myState { liked faved reactions } reactionGroups { content count } } }`;
    for (const [app, through] of [
      [tally, gateway],
      [replica, gatewayJs],
    ] as const) {
      await through.gql(query, {}, viewer); // warm: the entity lookups
      const before = app.app.redisRoundTrips.count;
      const res = await through.gql(query, {}, viewer);
      expect(res.errors).toBeUndefined();
      expect(res.data.posts).toHaveLength(20);
      expect(app.app.redisRoundTrips.count - before, app.app.config.executor).toBe(1);
    }
  });

  it.each([
    ['jit', () => gateway],
    ['graphql-js', () => gatewayJs],
  ])("carries Tally's error codes through composition, production-masked (%s)", async (_, via) => {
    const gateway = via();
    const user = await tally.token(5);
    const missing = await gateway.gql(
      `mutation { setEntityRelation(input: { type: "comment", id: "nope", active: true }) { changed } }`,
      {},
      user,
    );
    expect(errorCodes(missing)).toEqual(['NOT_FOUND']);
    const anonymous = await gateway.gql(
      `mutation { setEntityRelation(input: { type: "comment", id: "p0-c0", active: true }) { changed } }`,
    );
    expect(errorCodes(anonymous)).toEqual(['UNAUTHENTICATED']);
    const badReaction = await gateway.gql(
      `mutation { setEntityReaction(input: { type: "comment", id: "p0-c0", content: "NOPE", active: true }) { changed } }`,
      {},
      user,
    );
    expect(errorCodes(badReaction)).toEqual(['BAD_USER_INPUT']);
    // A user token may not register entities, nor a service credential like.
    const asUser = await gateway.gql(
      `mutation { registerEntities(input: { entities: [{ type: "comment", id: "x", ownerId: "5", version: "1" }] }) { applied } }`,
      {},
      user,
    );
    expect(errorCodes(asUser)).toEqual(['FORBIDDEN']);
  });
});

describe('live counts beside the gateway', () => {
  it("pushes an owner type's counts to sockets on Tally directly, on every replica", async () => {
    const watch = (app: TestApp) => {
      const client = connectLive(app.url);
      clients.push(client);
      return client.subscribe(
        `subscription { entityCountsChanged(type: "comment", ids: ["p5-c1", "never-registered"]) { __typename id counts { likes } } }`,
      );
    };
    const onJit = await onServer(tally.url, 1, () => watch(tally));
    const onJs = await onServer(replica.url, 1, () => watch(replica));
    const liked = await gateway.gql(
      `mutation { setEntityRelation(input: { type: "comment", id: "p5-c1", active: true }) { changed } }`,
      {},
      await tally.token(9),
    );
    expect(liked.errors).toBeUndefined();
    for (const subscription of [onJit, onJs]) {
      await waitUntil(async () => subscription.received.length > 0, { what: 'a push' });
      expect(subscription.received.at(-1)).toEqual({
        data: { entityCountsChanged: { __typename: 'Comment', id: 'p5-c1', counts: { likes: 1 } } },
      });
    }
  });

  it('refuses a type the services do not own', async () => {
    const client = connectLive(tally.url);
    clients.push(client);
    expect(await refusalCodes(client.subscribe(`subscription { entityCountsChanged(type: "photo", ids: ["x"]) { id } }`))).toEqual([
      'BAD_USER_INPUT',
    ]);
  });
});

describe('the subgraph endpoint itself', () => {
  it('refuses representations that are not its keyed types, and serves its SDL to a service credential only', async () => {
    const entities = (representations: unknown[]) =>
      tally.gql(`query($r: [_Any!]!) { _entities(representations: $r) { ... on Comment { id } } }`, { r: representations });
    expect(errorCodes(await entities([{ __typename: 'Query', id: '1' }]))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await entities([{ __typename: 'Comment', id: 7 }]))).toEqual(['BAD_USER_INPUT']);
    expect(
      (
        await entities([
          { __typename: 'Comment', id: 'p0-c1' },
          { __typename: 'Comment', id: 'nope' },
        ])
      ).data._entities,
    ).toEqual([{ id: 'p0-c1' }, null]);
    expect(errorCodes(await tally.gql('{ _service { sdl } }'))).toEqual(['FORBIDDEN']);
    const sdl = await tally.gql('{ _service { sdl } }', {}, { token: service });
    expect(sdl.data._service.sdl).toMatch(/type Comment implements OwnedEntity\s+@key\(fields: "id"\)/);
    // The stand-alone service's own posts and feed are not part of the subgraph.
    expect(sdl.data._service.sdl).not.toMatch(/^\s+(feed|createPost|likedPosts|name)\b/m);
  });

  it.each([
    ['jit', () => tally],
    ['graphql-js', () => replica],
  ])('sends no field traces (ftv1) to a client asking for them (%s)', async (_, app) => {
    const asked = await app().gql(
      `query($r: [_Any!]!) { _entities(representations: $r) { ... on Comment { id counts { likes } } } }`,
      { r: [{ __typename: 'Comment', id: 'p0-c0' }] },
      { headers: { 'apollo-federation-include-trace': 'ftv1' } },
    );
    expect(asked.errors).toBeUndefined();
    expect(asked.data._entities).toHaveLength(1);
    expect(asked.extensions?.ftv1).toBeUndefined();
  });

  it('resolves a user Tally never met as one with no relations', async () => {
    const res = await tally.gql(
      `query($r: [_Any!]!) { _entities(representations: $r) { ... on User { id counts { followers likesReceived } } } }`,
      { r: [{ __typename: 'User', id: '987654' }] },
    );
    expect(res.data._entities).toEqual([{ id: '987654', counts: { followers: 0, likesReceived: 0 } }]);
  });
});
