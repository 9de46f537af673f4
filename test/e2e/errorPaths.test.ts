// Every error path as deployed: NODE_ENV=production, once per executor. Each case checks the
// HTTP status, the `extensions.code`, and that nothing happened beyond what the answer says.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

interface Answer {
  status: number;
  body: { data?: any; errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, any> }[] };
}

const codes = (a: Answer) => (a.body.errors ?? []).map((e) => e.extensions?.code);

describe.each(['jit', 'graphql-js'])('in production with the %s executor', (executor) => {
  let t: TestApp;
  let alice: string; // user 1: writes posts
  let bob: string; // user 2
  let postIds: string[];

  beforeAll(async () => {
    t = await startTestApp({
      NODE_ENV: 'production',
      GRAPHQL_EXECUTOR: executor,
      // Compiled at once: every error below comes from the executor named.
      JIT_COMPILE_AFTER: '1',
      RATE_LIMIT_CHANGES: '3',
      RATE_LIMIT_WINDOW_MS: '600000',
    });
    postIds = await t.createPosts(3, 1);
    alice = await t.token(1);
    bob = await t.token(2);
  });
  afterAll(() => t.stop());

  /** POST (or GET) /graphql as a client sends it, with the answer's status and body. */
  async function send(
    body: Record<string, unknown>,
    { token, method = 'POST', headers = {} }: { token?: string; method?: 'POST' | 'GET'; headers?: Record<string, string> } = {},
  ): Promise<Answer> {
    const all: Record<string, string> = { accept: 'application/graphql-response+json, application/json', ...headers };
    if (token) all.authorization = `Bearer ${token}`;
    let url = `${t.url}/graphql`;
    let payload: string | undefined;
    if (method === 'GET') {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(body)) params.set(k, typeof v === 'string' ? v : JSON.stringify(v));
      url += `?${params}`;
      all['apollo-require-preflight'] = 'true';
    } else {
      all['content-type'] = 'application/json';
      payload = JSON.stringify(body);
    }
    const res = await fetch(url, { method, headers: all, body: payload });
    return { status: res.status, body: (await res.json()) as Answer['body'] };
  }

  const likedBy = async (token: string, postId: string) =>
    (await send({ query: 'query($id: ID!) { post(id: $id) { myState { liked } } }', variables: { id: postId } }, { token })).body.data.post
      .myState.liked;
  const follows = async (token: string, userId: string) =>
    (await send({ query: 'query($id: ID!) { user(id: $id) { followedByViewer } }', variables: { id: userId } }, { token })).body.data.user
      .followedByViewer;
  const likesPublic = async (token: string) =>
    (await send({ query: '{ viewer { likesPublic } }' }, { token })).body.data.viewer.likesPublic;
  const postCount = () => t.app.db.post.count();

  describe('arguments a resolver refuses', () => {
    it('answers 200 BAD_USER_INPUT for a bad argument on a non-null field (no 500)', async () => {
      const a = await send({ query: '{ feed(first: 0) { edges { cursor } } }' });
      expect([a.status, codes(a), a.body.data]).toEqual([200, ['BAD_USER_INPUT'], null]);
      expect(a.body.errors![0]!.message).toMatch(/first must be between 1 and 100/);
    });

    it('answers a bad id on a nullable field with a null and BAD_USER_INPUT beside the rest', async () => {
      const a = await send({ query: '{ post(id: "abc") { id } viewer { id } }' });
      expect([a.status, codes(a), a.body.data]).toEqual([200, ['BAD_USER_INPUT'], { post: null, viewer: null }]);
    });

    it('refuses a cursor this list did not issue', async () => {
      const a = await send({ query: '{ feed(after: "forged.cursor") { edges { cursor } } }' });
      expect([a.status, codes(a)]).toEqual([200, ['BAD_USER_INPUT']]);
    });
  });

  describe('documents that do not parse, validate or resolve', () => {
    it.each([
      ['a syntax error', { query: '{ feed { ' }, /Syntax Error/],
      ['more tokens than MAX_QUERY_TOKENS', { query: `{ viewer { ${'id '.repeat(6000)} } }` }, /tokens/],
      ['an unknown field', { query: '{ feedd { edges { cursor } } }' }, /Cannot query field/],
      [
        'a variable of the wrong type',
        { query: 'query($n: Int) { feed(first: $n) { edges { cursor } } }', variables: { n: 'many' } },
        /\$n/,
      ],
      [
        'an enum value that does not exist',
        { query: 'query($k: RelationKind) { viewer { likedPosts(kind: $k) { edges { cursor } } } }', variables: { k: 'FAVV' } },
        /FAVV/,
      ],
      ['a missing required variable', { query: 'query($id: ID!) { post(id: $id) { id } }' }, /\$id/],
      [
        'a subscription (they are served over WebSocket)',
        { query: 'subscription { postCountsChanged(postIds: ["1"]) { id } }' },
        /WebSocket/,
      ],
      ['two operations and no operationName', { query: 'query A { viewer { id } } query B { viewer { id } }' }, /operation name/],
      [
        'too deep',
        {
          query:
            '{ feed { edges { node { author { followers { edges { node { following { edges { node { followers { edges { node { id } } } } } } } } } } } } } }',
        },
        /depth/i,
      ],
    ])('answers 400 BAD_USER_INPUT for %s, with no suggestion of the schema', async (_, body, message) => {
      const a = await send(body);
      expect([a.status, codes(a)]).toEqual([400, ['BAD_USER_INPUT']]);
      expect(a.body.data).toBeUndefined();
      expect(a.body.errors![0]!.message).toMatch(message);
      expect(JSON.stringify(a.body)).not.toMatch(/did you mean|stacktrace/i);
    });

    it('runs nothing when operationName names no operation of the document', async () => {
      const before = await likesPublic(alice);
      const a = await send(
        { query: `mutation Flip { updateProfile(input: { likesPublic: ${!before} }) { likesPublic } }`, operationName: 'Other' },
        { token: alice },
      );
      expect([a.status, codes(a)]).toEqual([400, ['BAD_USER_INPUT']]);
      expect(a.body.errors![0]!.message).toMatch(/Unknown operation named "Other"/);
      expect(await likesPublic(alice)).toBe(before);
    });

    it('runs no mutation over GET, whatever the operationName', async () => {
      const mutation = 'mutation Follow { setFollowRelation(input: { userId: "1", active: true }) { changed } }';
      for (const operationName of ['Follow', 'Other', undefined]) {
        const a = await send({ query: mutation, ...(operationName && { operationName }) }, { token: bob, method: 'GET' });
        expect(a.status, String(operationName)).toBeGreaterThanOrEqual(400);
        expect(a.status, String(operationName)).toBeLessThan(500);
        expect(codes(a)).toEqual(['BAD_USER_INPUT']);
      }
      expect(await follows(bob, '1')).toBe(false);
    });
  });

  describe('authentication and permissions', () => {
    it('answers 401 UNAUTHENTICATED to a mutation without a token, and creates nothing', async () => {
      const before = await postCount();
      const a = await send({ query: 'mutation { createPost(input: { title: "t", body: "b" }) { id } }' });
      expect([a.status, codes(a)]).toEqual([401, ['UNAUTHENTICATED']]);
      expect(await postCount()).toBe(before);
    });

    it('answers 401 UNAUTHENTICATED to a bad token', async () => {
      const a = await send({ query: '{ viewer { id } }' }, { token: `${alice}x` });
      expect([a.status, codes(a)]).toEqual([401, ['UNAUTHENTICATED']]);
    });

    it("answers FORBIDDEN for deleting someone else's post, which stays", async () => {
      const a = await send({ query: 'mutation($id: ID!) { deletePost(id: $id) { id } }', variables: { id: postIds[0] } }, { token: bob });
      expect([a.status, codes(a)]).toEqual([200, ['FORBIDDEN']]);
      expect((await send({ query: `{ post(id: "${postIds[0]}") { id } }` })).body.data.post).toEqual({ id: postIds[0] });
    });

    it("answers FORBIDDEN for someone else's bookmarks, anonymous or not", async () => {
      for (const token of [bob, undefined]) {
        const a = await send({ query: '{ user(id: "1") { id bookmarks { edges { cursor } } } }' }, { token });
        expect([a.status, codes(a), a.body.data]).toEqual([200, ['FORBIDDEN'], { user: null }]);
      }
    });

    it('answers FORBIDDEN for the liked posts of a user who keeps them private', async () => {
      const a = await send({ query: '{ user(id: "1") { id likedPosts { edges { cursor } } } }' }, { token: bob });
      expect([a.status, codes(a), a.body.data]).toEqual([200, ['FORBIDDEN'], { user: null }]);
    });
  });

  describe('mutations that are refused', () => {
    it('answers NOT_FOUND for a missing post or user, and stores nothing', async () => {
      const like = await send(
        { query: 'mutation { setLikeRelation(input: { postId: "99999", active: true }) { changed } }' },
        { token: bob },
      );
      expect([like.status, codes(like)]).toEqual([200, ['NOT_FOUND']]);
      const follow = await send(
        { query: 'mutation { setFollowRelation(input: { userId: "99999", active: true }) { changed } }' },
        { token: bob },
      );
      expect([follow.status, codes(follow)]).toEqual([200, ['NOT_FOUND']]);
      for (const query of [
        'mutation { setReaction(input: { postId: "99999", content: "HEART", active: true }) { changed } }',
        'mutation { setBookmark(input: { postId: "99999", active: true }) { changed } }',
      ]) {
        const a = await send({ query }, { token: bob });
        expect([a.status, codes(a)]).toEqual([200, ['NOT_FOUND']]);
      }
      expect(await t.app.db.relationFact.count({ where: { entityId: 99999 } })).toBe(0);
    });

    it('answers NOT_FOUND at the entry of recordViews whose post is missing, counts the others, and BAD_USER_INPUT for a malformed id', async () => {
      const record = (ids: string[]) =>
        send(
          { query: 'mutation($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }', variables: { ids } },
          { token: bob },
        );
      const a = await record(['99999', postIds[0]!]);
      expect([a.status, codes(a), a.body.errors![0]!.path]).toEqual([200, ['NOT_FOUND'], ['recordViews', 'views', 0]]);
      expect(a.body.data.recordViews.views).toEqual([null, { counted: true }]);
      const b = await record([postIds[1]!, 'x']);
      expect([b.status, codes(b)]).toEqual([200, ['BAD_USER_INPUT']]);
      const c = await record([postIds[1]!]);
      expect(c.body.data.recordViews.views).toEqual([{ counted: true }]); // the refused request counted nothing
    });

    it('answers BAD_USER_INPUT naming the reactions for an unknown one, and sets nothing', async () => {
      const token = await t.token(7);
      const a = await send(
        {
          query: 'mutation($p: ID!) { setReaction(input: { postId: $p, content: "LOVE", active: true }) { changed } }',
          variables: { p: postIds[2] },
        },
        { token },
      );
      expect([a.status, codes(a)]).toEqual([200, ['BAD_USER_INPUT']]);
      expect(a.body.errors![0]!.message).toMatch(/^content must be one of THUMBS_UP, .*, EYES$/);
      expect(await t.app.db.relationFact.count({ where: { userId: 7 } })).toBe(0);
    });

    it('answers CONFLICT for an idempotency key reused for another post, which stays unliked', async () => {
      const token = await t.token(4);
      const set = (postId: string) =>
        send(
          {
            query: 'mutation($p: ID!) { setLikeRelation(input: { postId: $p, active: true, idempotencyKey: "k-1" }) { changed } }',
            variables: { p: postId },
          },
          { token },
        );
      expect(codes(await set(postIds[0]!))).toEqual([]);
      const a = await set(postIds[1]!);
      expect([a.status, codes(a)]).toEqual([200, ['CONFLICT']]);
      expect(await likedBy(token, postIds[1]!)).toBe(false);
    });

    it('answers RATE_LIMITED past the budget, and the refused change is not made', async () => {
      const token = await t.token(5);
      const like = (postId: string, active: boolean) =>
        send(
          {
            query: 'mutation($p: ID!, $a: Boolean!) { setLikeRelation(input: { postId: $p, active: $a }) { changed } }',
            variables: { p: postId, a: active },
          },
          { token },
        );
      for (const active of [true, false, true]) expect(codes(await like(postIds[0]!, active))).toEqual([]);
      const a = await like(postIds[1]!, true);
      expect([a.status, codes(a)]).toEqual([200, ['RATE_LIMITED']]);
      expect(a.body.errors![0]!.extensions!.retryAfterMs).toBeGreaterThan(0);
      expect(await likedBy(token, postIds[1]!)).toBe(false);
    });

    it('reports each aliased mutation of a document: what ran is in data, what was refused is null with its error', async () => {
      const token = await t.token(6);
      const a = await send(
        {
          query: `mutation {
            first: setFollowRelation(input: { userId: "1", active: true }) { changed }
            self: setFollowRelation(input: { userId: "6", active: true }) { changed }
            last: setFollowRelation(input: { userId: "2", active: true }) { changed }
          }`,
        },
        { token },
      );
      expect(a.status).toBe(200);
      expect(a.body.data).toEqual({ first: { changed: true }, self: null, last: { changed: true } });
      expect(a.body.errors!.map((e) => [e.extensions?.code, e.path])).toEqual([['BAD_USER_INPUT', ['self']]]);
      expect([await follows(token, '1'), await follows(token, '2')]).toEqual([true, true]);
    });
  });

  describe('text a client sends', () => {
    const create = 'mutation($t: String!) { createPost(input: { title: $t, body: "b" }) { id } }';

    it('refuses a body that is not valid UTF-8 (400), and stores nothing', async () => {
      const before = await postCount();
      const json = Buffer.from(JSON.stringify({ query: create, variables: { t: 'AB' } }));
      json[json.indexOf('AB')] = 0xff; // a byte no UTF-8 text has
      const res = await fetch(`${t.url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${alice}` },
        body: json,
      });
      expect(res.status).toBe(400);
      expect(((await res.json()) as Answer['body']).errors![0]!.extensions!.code).toBe('BAD_USER_INPUT');
      expect(await postCount()).toBe(before);
    });

    it.each([
      ['a lone surrogate', 'ok \ud800'],
      ['only zero-width spaces', '\u200b\u200b'],
    ])('refuses a title of %s, and stores nothing', async (_, title) => {
      const before = await postCount();
      const a = await send({ query: create, variables: { t: title } }, { token: alice });
      expect([a.status, codes(a), a.body.data]).toEqual([200, ['BAD_USER_INPUT'], { createPost: null }]);
      expect(await postCount()).toBe(before);
    });

    it('counts an idempotencyKey in characters, as titles are counted', async () => {
      const token = await t.token(7);
      const set = (key: string) =>
        send(
          {
            query: 'mutation($p: ID!, $k: String) { setLikeRelation(input: { postId: $p, active: true, idempotencyKey: $k }) { changed } }',
            variables: { p: postIds[2], k: key },
          },
          { token },
        );
      expect(codes(await set('😀'.repeat(255)))).toEqual([]);
      const tooLong = await set('😀'.repeat(256));
      expect(codes(tooLong)).toEqual(['BAD_USER_INPUT']);
      expect(tooLong.body.errors![0]!.message).toMatch(/got 256/);
    });

    it('takes the Bearer scheme in any case', async () => {
      for (const scheme of ['bearer', 'BEARER']) {
        const a = await send({ query: '{ viewer { id } }' }, { headers: { authorization: `${scheme} ${bob}` } });
        expect(a.body.data).toEqual({ viewer: { id: '2' } });
      }
    });
  });

  describe('automatic persisted queries', () => {
    const sha = (q: string) => createHash('sha256').update(q).digest('hex');

    it('answers 400 BAD_USER_INPUT for a hash that does not match the query, or an unknown version', async () => {
      const mismatch = await send({
        query: '{ viewer { id } }',
        extensions: { persistedQuery: { version: 1, sha256Hash: sha('{ other }') } },
      });
      expect([mismatch.status, codes(mismatch)]).toEqual([400, ['BAD_USER_INPUT']]);
      const version = await send({ extensions: { persistedQuery: { version: 2, sha256Hash: sha('{ viewer { id } }') } } });
      expect([version.status, codes(version)]).toEqual([400, ['BAD_USER_INPUT']]);
    });

    it('answers PERSISTED_QUERY_NOT_FOUND for an unknown hash, the code the protocol needs', async () => {
      const a = await send({ extensions: { persistedQuery: { version: 1, sha256Hash: sha('{ viewer { name } }') } } });
      expect(codes(a)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    });
  });

  it('counts none of the client errors above as INTERNAL_SERVER_ERROR', async () => {
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    expect(metrics).toMatch(/tally_graphql_requests_total\{[^}]*outcome="BAD_USER_INPUT"[^}]*\} \d+/);
    expect(metrics).not.toMatch(/outcome="INTERNAL_SERVER_ERROR"/);
  });
});
