// Tally executes operations with graphql-jit (GRAPHQL_EXECUTOR=jit, the default); graphql-js
// stays available as the fallback. Both must give clients the same answers: the same data,
// the same null propagation, the same errors with the same codes and paths. The graphql-jit
// processes here compile every document at once (JIT_COMPILE_AFTER=1), so each answer below
// is a compiled plan's; by default a document runs on graphql-js until its second run.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type GraphQLResponse, startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

let jit: TestApp;
let js: TestApp;
let viewer: string;
let postIds: string[];

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed post { id myState { liked faved } } } }';

beforeAll(async () => {
  jit = await startTestApp({ GRAPHQL_EXECUTOR: 'jit', JIT_COMPILE_AFTER: '1' });
  js = await startTestApp({ GRAPHQL_EXECUTOR: 'graphql-js' }, { sharing: jit });
  postIds = await jit.createPosts(6, 2);
  viewer = await jit.token(3, { name: 'Viewer' });
  for (const [i, postId] of postIds.entries()) {
    if (i % 2 === 0) await jit.gql(SET, { i: { postId, active: true } }, { token: viewer });
    if (i % 3 === 0) await jit.gql(SET, { i: { postId, active: true, kind: 'FAV' } }, { token: viewer });
  }
  await jit.gql('mutation { setFollowRelation(input: { userId: "2", active: true }) { changed } }', {}, { token: viewer });
  // Counts settle, so both executors read the same numbers.
  await waitFor(
    () => jit.gql('{ feed { edges { node { counts { likes } } } } }'),
    (r) => r.data.feed.edges.reduce((n: number, e: any) => n + e.node.counts.likes, 0) === 3,
    { what: 'likes counted' },
  );
}, 60_000);
afterAll(async () => {
  await js?.stop();
  await jit?.stop();
});

/** The response as a client reads it; stack traces (development only) differ by executor. */
function answer(res: GraphQLResponse) {
  const errors = res.errors?.map(({ extensions, ...rest }) => {
    const { stacktrace: _, ...kept } = extensions ?? {};
    return { ...rest, extensions: kept };
  });
  return { status: res.status, data: res.data, ...(errors && { errors }) };
}

async function expectSameAnswer(query: string, variables: Record<string, unknown> = {}, token?: string) {
  const options = token ? { token } : {};
  const [a, b] = await Promise.all([jit.gql(query, variables, options), js.gql(query, variables, options)]);
  expect(answer(a)).toEqual(answer(b));
  return answer(a);
}

describe('graphql-jit and graphql-js', () => {
  it('answer a feed page alike: posts, authors, counts, viewer state, cursors', async () => {
    const res = await expectSameAnswer(
      `query($first: Int) { feed(first: $first) {
        edges { cursor node { id title body createdAt author { id name likesPublic } counts { likes favs } myState { liked faved } } }
        pageInfo { hasNextPage endCursor } } }`,
      { first: 4 },
      viewer,
    );
    expect(res.data.feed.edges).toHaveLength(4);
    expect(res.data.feed.edges.some((e: any) => e.node.myState.liked)).toBe(true);
  });

  it('answer lookups, lists, user counters and the viewer alike', async () => {
    await expectSameAnswer(
      `query($ids: [ID!]!, $id: ID!) {
        posts(ids: $ids) { id likers(first: 5) { edges { node { id } } pageInfo { hasNextPage } } }
        post(id: $id) { id }
        viewer { id name counts { followings followers posts } following { edges { node { id } } } }
        user(id: "2") { id followedByViewer counts { posts likesReceived favsReceived } }
      }`,
      { ids: [postIds[0], '999999', postIds[1]], id: '999998' },
      viewer,
    );
  });

  it('propagate an error to the nearest nullable parent alike', async () => {
    // User 2 keeps likes private: likedPosts (non-null) fails, so `user` becomes null.
    const res = await expectSameAnswer('{ user(id: "2") { id likedPosts { edges { node { id } } } } }', {}, viewer);
    expect(res.data).toEqual({ user: null });
    expect(res.errors?.map((e) => [e.extensions.code, e.path])).toEqual([['FORBIDDEN', ['user', 'likedPosts']]]);
  });

  it('refuse bad arguments, bad variables and unknown fields alike', async () => {
    for (const [query, variables] of [
      ['{ feed(first: 0) { edges { cursor } } }', {}],
      ['{ feed(after: "forged") { edges { cursor } } }', {}],
      ['query($id: ID!) { post(id: $id) { id } }', {}],
      ['query($k: RelationKind) { viewer { likedPosts(kind: $k) { edges { cursor } } } }', { k: 'LOVE' }],
      ['query($n: Int) { feed(first: $n) { edges { cursor } } }', { n: 'many' }],
      ['{ post(id: "abc") { id } }', {}],
      ['{ nope }', {}],
    ] as const) {
      const res = await expectSameAnswer(query, variables, viewer);
      expect(res.errors?.map((e) => e.extensions.code)).toEqual(['BAD_USER_INPUT']);
    }
  });

  it('answer mutations and their errors alike', async () => {
    const [a, b] = await Promise.all([
      jit.gql(SET, { i: { postId: postIds[5], active: true } }, { token: viewer }),
      js.gql(SET, { i: { postId: postIds[5], active: true } }, { token: viewer }),
    ]);
    // One of the two set the like; both report the same resulting state.
    expect([a.data.setLikeRelation.changed, b.data.setLikeRelation.changed].sort()).toEqual([false, true]);
    expect(a.data.setLikeRelation.post).toEqual(b.data.setLikeRelation.post);
    await expectSameAnswer(SET, { i: { postId: '999999', active: true } }, viewer);
    await expectSameAnswer(SET, { i: { postId: postIds[0], active: true } });
    await expectSameAnswer('mutation { setFollowRelation(input: { userId: "3", active: true }) { changed } }', {}, viewer);
  });

  it('answer introspection alike outside production (GraphiQL reads the schema this way), and refuse it alike in production', async () => {
    const query = `{
      __schema { queryType { name } mutationType { name } types { name kind fields { name args { name defaultValue } type { name kind ofType { name } } } } }
      __type(name: "Post") { name fields { name description } }
    }`;
    expect(new Set((await expectSameAnswer(query)).errors?.map((e) => e.extensions.code))).toEqual(new Set(['BAD_USER_INPUT']));
    const devJit = await startTestApp({ NODE_ENV: 'development', GRAPHQL_EXECUTOR: 'jit', JIT_COMPILE_AFTER: '1' }, { sharing: jit });
    const devJs = await startTestApp({ NODE_ENV: 'development', GRAPHQL_EXECUTOR: 'graphql-js' }, { sharing: jit });
    try {
      const [a, b] = await Promise.all([devJit.gql(query), devJs.gql(query)]);
      expect(answer(a)).toEqual(answer(b));
      expect(a.data.__type.fields.map((f: any) => f.name)).toContain('counts');
    } finally {
      await devJs.stop();
      await devJit.stop();
    }
  });
});

describe('graphql-jit by default (JIT_COMPILE_AFTER=2)', () => {
  it('runs a new document on graphql-js, compiles it on its second run, and answers alike every time', async () => {
    const t = await startTestApp({ GRAPHQL_EXECUTOR: 'jit' }, { sharing: jit });
    try {
      const compiledBytes = async () => {
        const metrics = await (await fetch(`${t.url}/metrics`)).text();
        return Number(/tally_graphql_document_cache_bytes\{cache="compiled"\} (\d+)/.exec(metrics)![1]);
      };
      const query = `query($first: Int) { feed(first: $first) { edges { cursor node { id title author { name } counts { likes favs } myState { liked faved } } } } }`;
      const run = async () => answer(await t.gql(query, { first: 4 }, { token: viewer }));
      const first = await run();
      expect(first.data.feed.edges).toHaveLength(4);
      expect(await compiledBytes()).toBe(0);
      expect(await run()).toEqual(first);
      expect(await compiledBytes()).toBeGreaterThan(0);
      expect(await run()).toEqual(first);
    } finally {
      await t.stop();
    }
  });
});
