// A product's service registers and deletes the entities it owns with a credential of its
// own; a user's token cannot, and the service's credential acts as no user.
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SERVICE_AUDIENCE } from '../../src/auth/jwt.js';
import { packCounters } from '../../src/counters/packedCounters.js';
import { FAV, LIKE } from '../../src/domain/relations.js';
import { errorCodes, type GraphQLResponse, startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { waitForPersister } from '../support/settle.js';
import { waitFor } from '../support/wait.js';

// The registry is built from the process's settings at import: set them before anything loads it.
vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'comment;video:like,reactions:unowned';
});
const SERVICE_SECRET = 'service-secret-0123456789abcdef0123456789';

let t: TestApp;
let service: string;
beforeAll(async () => {
  t = await startTestApp({ ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET });
  service = await t.app.deps.auth.signService('blog');
});
afterAll(() => t.stop());

const REGISTER = `mutation($entities: [EntityRegistration!]!) { registerEntities(input: { entities: $entities }) { applied } }`;
const DELETE = `mutation($entities: [EntityDeletion!]!) { deleteEntities(input: { entities: $entities }) { applied } }`;
const register = (entities: object[], token = service) => t.gql(REGISTER, { entities }, { token });
const remove = (entities: object[], token = service) => t.gql(DELETE, { entities }, { token });
const comment = (id: string, version = '1', ownerId: string | null = '7') => ({ type: 'comment', id, ownerId, version });
/** As `token`'s user, likes one entity and reacts to another in one request; their answers. */
async function likeAndReact(token: string, like: object, react: object) {
  const res = await t.gql(
    `mutation($like: SetEntityRelationInput!, $react: SetEntityReactionInput!) {
      like: setEntityRelation(input: $like) { changed } react: setEntityReaction(input: $react) { changed } }`,
    { like: { ...like, active: true }, react: { ...react, active: true } },
    { token },
  );
  expect(res.errors).toBeUndefined();
  return res.data;
}

describe('registering entities', () => {
  it('applies each entity once, by version, and deletes for good', async () => {
    const entities = [comment('c-1'), comment('c-2'), { type: 'video', id: 'v-1', version: '1' }];
    expect((await register(entities)).data.registerEntities).toEqual({ applied: 3 });
    expect((await register(entities)).data.registerEntities).toEqual({ applied: 0 }); // a retry
    expect((await register([comment('c-1', '2')])).data.registerEntities).toEqual({ applied: 1 });
    expect((await remove([{ type: 'comment', id: 'c-2', version: '2' }])).data.deleteEntities).toEqual({ applied: 1 });
    expect((await register([comment('c-2', '3')])).data.registerEntities).toEqual({ applied: 0 });
  });

  it('refuses a whole call for one bad entry, naming it', async () => {
    const cases: [object, RegExp][] = [
      [{ type: 'photo', id: 'p', ownerId: '7', version: '1' }, /entities\[1\]\.type: "photo" is not a type .*\(comment, video\)/],
      [comment('c-9', '1', null), /entities\[1\]\.ownerId: a comment has an owner/],
      [{ type: 'video', id: 'v-9', ownerId: '7', version: '1' }, /entities\[1\]\.ownerId: a video has no owner/],
      [comment('', '1'), /entities\[1\]\.id: 1 to 128 characters/],
      [comment('x'.repeat(129), '1'), /entities\[1\]\.id/],
      [comment('c-9', '0'), /entities\[1\]\.version: a positive integer below 2\^63/],
      [comment('c-9', '9223372036854775808'), /entities\[1\]\.version/],
    ];
    for (const [bad, message] of cases) {
      const res = await register([comment('c-ok'), bad]);
      expect(errorCodes(res), JSON.stringify(bad)).toEqual(['BAD_USER_INPUT']);
      expect(res.errors![0]!.message).toMatch(message);
    }
    // Nothing of those calls was registered: the good entry is new now.
    expect((await register([comment('c-ok')])).data.registerEntities).toEqual({ applied: 1 });
    const tooMany = Array.from({ length: 1001 }, (_, i) => comment(`m-${i}`));
    expect(errorCodes(await register(tooMany))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await register([]))).toEqual(['BAD_USER_INPUT']);
  });

  it("takes a service credential only, and a service's credential acts as no user", async () => {
    const user = await t.token(7);
    expect(errorCodes(await register([comment('u-1')], user))).toEqual(['FORBIDDEN']);
    expect(errorCodes(await remove([{ type: 'comment', id: 'u-1', version: '1' }], user))).toEqual(['FORBIDDEN']);
    expect(errorCodes(await t.gql(REGISTER, { entities: [comment('u-1')] }))).toEqual(['UNAUTHENTICATED']);

    const [post] = await t.createPosts(1);
    const like = await t.gql(
      'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
      { id: post },
      { token: service },
    );
    expect(errorCodes(like)).toEqual(['FORBIDDEN']);
    expect(errorCodes(await t.gql('{ viewer { id } }', {}, { token: service }))).toEqual([]);

    // A service credential signed with the users' key, and a user token signed with the services' key, are nobody's.
    const forged = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('blog')
      .setAudience(SERVICE_AUDIENCE)
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    expect(errorCodes(await register([comment('u-1')], forged))).toEqual(['UNAUTHENTICATED']);
    const userBySecret = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('7')
      .setExpirationTime('1h')
      .sign(new TextEncoder().encode(SERVICE_SECRET));
    expect(errorCodes(await t.gql('{ viewer { id } }', {}, { token: userBySecret }))).toEqual(['UNAUTHENTICATED']);
    expect((await register([comment('u-1')])).data.registerEntities).toEqual({ applied: 1 });
  });

  it("takes relations on a registered entity, moves its owner's counters, and refuses it everywhere once deleted", async () => {
    const replica = await startTestApp({ ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET }, { sharing: t });
    try {
      await register([comment('r-1', '1', '70'), { type: 'video', id: 'r-v', version: '1' }]);
      const commandsOf = (app: TestApp) => app.app.deps.commands.relations;
      const like = (app: TestApp, key: string, userId = 5, type = 'comment') =>
        commandsOf(app).setOnEntity(userId, { type, key, relation: LIKE, active: true });
      expect(await like(t, 'r-1')).toMatchObject({ entity: { key: 'r-1', ownerId: 70 }, active: true, changed: true });
      expect((await like(replica, 'r-1')).changed).toBe(false); // the same fact, through the other process
      expect((await like(t, 'r-1', 6)).changed).toBe(true);
      const received = () => t.app.deps.userCounters.load([70]).then(([c]) => c?.likesReceived ?? 0);
      await waitFor(received, (n) => n === 2, { what: "the owner's likesReceived" });
      const { entity } = await like(replica, 'r-1');
      const likes = async () =>
        (await replica.app.deps.postCounters.loadEntities([{ type: 'comment', id: entity.id }]))[0]?.slots[LIKE.slot!];
      await waitFor(likes, (n) => n === 2, { what: 'the comment counted' });
      // An unowned type moves no one's counters; a kind the type does not take, an unknown id, an unknown type.
      expect((await like(t, 'r-v', 5, 'video')).changed).toBe(true);
      await expect(commandsOf(t).setOnEntity(5, { type: 'video', key: 'r-v', relation: FAV, active: true })).rejects.toMatchObject({
        extensions: { code: 'BAD_USER_INPUT' },
      });
      await expect(like(t, 'r-404')).rejects.toMatchObject({ extensions: { code: 'NOT_FOUND' } });
      await expect(like(t, 'r-1', 5, 'post')).rejects.toMatchObject({ extensions: { code: 'BAD_USER_INPUT' } });

      // Deleted through the replica: this process, which holds it in its cache, refuses it too.
      const deleted = await replica.gql(DELETE, { entities: [{ type: 'comment', id: 'r-1', version: '2' }] }, { token: service });
      expect(deleted.data.deleteEntities).toEqual({ applied: 1 });
      const started = Date.now();
      await waitFor(
        () =>
          like(t, 'r-1', 8).then(
            () => 'accepted',
            (error: { extensions?: { code?: string } }) => error.extensions?.code ?? 'error',
          ),
        (outcome) => outcome === 'NOT_FOUND',
        { what: 'the deletion to reach the other process', timeoutMs: 5000 },
      );
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      await replica.stop();
    }
  });

  it('serves each owner type as an OwnedEntity in GraphQL: counts, myState, reactions and changes, one Redis round trip a page', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => `g-${i}`);
    await register([...keys.map((key) => comment(key, '1', '90')), { type: 'video', id: 'g-v', version: '1' }]);
    const user = await t.token(91);
    const LIKE_IT = `mutation($input: SetEntityRelationInput!) {
      setEntityRelation(input: $input) { kind active changed entity { __typename id myState { liked faved } } }
    }`;
    const REACT_IT = `mutation($input: SetEntityReactionInput!) {
      setEntityReaction(input: $input) { content changed entity { id reactionGroups { content viewerHasReacted } } }
    }`;
    const liked = await t.gql(LIKE_IT, { input: { type: 'comment', id: 'g-1', active: true } }, { token: user });
    expect(liked.data.setEntityRelation).toEqual({
      kind: 'LIKE',
      active: true,
      changed: true,
      entity: { __typename: 'Comment', id: 'g-1', myState: { liked: true, faved: false } },
    });
    const reacted = await t.gql(REACT_IT, { input: { type: 'comment', id: 'g-1', content: 'HEART', active: true } }, { token: user });
    expect(reacted.data.setEntityReaction).toEqual({
      content: 'HEART',
      changed: true,
      entity: { id: 'g-1', reactionGroups: [{ content: 'HEART', viewerHasReacted: true }] },
    });
    expect(errorCodes(await t.gql(LIKE_IT, { input: { type: 'video', id: 'g-v', kind: 'FAV', active: true } }, { token: user }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    expect(errorCodes(await t.gql(LIKE_IT, { input: { type: 'comment', id: 'g-404', active: true } }, { token: user }))).toEqual([
      'NOT_FOUND',
    ]);
    expect(errorCodes(await t.gql(LIKE_IT, { input: { type: 'comment', id: 'g-1', active: true } }))).toEqual(['UNAUTHENTICATED']);

    const PAGE = `query($type: String!, $ids: [ID!]!) { entities(type: $type, ids: $ids) {
      __typename id counts { likes favs asOf } myState { liked reactions } reactionGroups { content count viewerHasReacted }
    } }`;
    const page = () => t.gql(PAGE, { type: 'comment', ids: ['g-1', 'g-404', ...keys.slice(2)] }, { token: user });
    const since = Date.now();
    const settled = await waitFor(
      page,
      (res) => {
        const first = res.data?.entities?.[0];
        return first?.counts.asOf !== null && Date.parse(first?.counts.asOf) > since;
      },
      { what: 'counts with an asOf after the changes' },
    );
    expect(settled.data.entities[0]).toEqual({
      __typename: 'Comment',
      id: 'g-1',
      counts: { likes: 1, favs: 0, asOf: expect.any(String) },
      myState: { liked: true, reactions: ['HEART'] },
      reactionGroups: [{ content: 'HEART', count: 1, viewerHasReacted: true }],
    });
    expect(settled.data.entities[1]).toBeNull();
    expect(settled.data.entities.slice(2).every((e: { counts: { likes: number } }) => e.counts.likes === 0)).toBe(true);
    // The same answers from graphql-js (the executor a deployment may choose instead of graphql-jit).
    const js = await startTestApp(
      { ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET, GRAPHQL_EXECUTOR: 'graphql-js' },
      { sharing: t },
    );
    try {
      const withoutAsOf = (res: GraphQLResponse) =>
        (res.data.entities as ({ counts: object } | null)[]).map((e) => e && { ...e, counts: { ...e.counts, asOf: undefined } });
      const fromJs = await js.gql(PAGE, { type: 'comment', ids: ['g-1', 'g-404', ...keys.slice(2)] }, { token: user });
      expect(withoutAsOf(fromJs)).toEqual(withoutAsOf(settled));
    } finally {
      await js.stop();
    }
    const anonymous = await t.gql(PAGE, { type: 'comment', ids: ['g-1'] });
    expect(anonymous.data.entities[0].myState).toBeNull();

    // A page of 20 entities: one Redis round trip for counts, viewer state and reactions.
    await page(); // warm: the entity lookups
    const before = t.app.redisRoundTrips.count;
    const measured = await page();
    expect(measured.errors).toBeUndefined();
    expect(t.app.redisRoundTrips.count - before).toBe(1);

    expect(errorCodes(await t.gql(PAGE, { type: 'photo', ids: ['x'] }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql(PAGE, { type: 'comment', ids: Array.from({ length: 101 }, (_, i) => `x${i}`) }))).toEqual([
      'BAD_USER_INPUT',
    ]);
    // Deleted: gone from reads, NOT_FOUND for changes.
    await remove([{ type: 'comment', id: 'g-1', version: '2' }]);
    expect((await t.gql(PAGE, { type: 'comment', ids: ['g-1'] }, { token: user })).data.entities).toEqual([null]);
    expect(errorCodes(await t.gql(LIKE_IT, { input: { type: 'comment', id: 'g-1', active: false } }, { token: user }))).toEqual([
      'NOT_FOUND',
    ]);
  });
  it("lists who liked or reacted to an entity, with likers' privacy", async () => {
    await register([comment('l-1', '1', '90')]);
    const [pub, priv] = [await t.token(95), await t.token(96)];
    await t.gql('mutation { updateProfile(input: { likesPublic: true }) { id } }', {}, { token: pub });
    for (const token of [pub, priv]) {
      expect(await likeAndReact(token, { type: 'comment', id: 'l-1' }, { type: 'comment', id: 'l-1', content: 'EYES' })).toEqual({
        like: { changed: true },
        react: { changed: true },
      });
    }
    const LISTS = `query { entities(type: "comment", ids: ["l-1"]) { ... on Comment {
      likers { edges { node { id } } } reactors(content: "EYES") { edges { node { id } } }
    } } }`;
    const ids = (res: GraphQLResponse, list: string) => res.data.entities[0][list].edges.map((e: { node: { id: string } }) => e.node.id);
    // The lists follow the facts within the persister's lag.
    const seen = await waitFor(
      () => t.gql(LISTS, {}, { token: priv }),
      (res) => res.data?.entities?.[0]?.reactors.edges.length === 2 && res.data.entities[0].likers.edges.length === 2,
      { what: 'both likers and both reactors listed' },
    );
    expect(ids(seen, 'likers').sort()).toEqual(['95', '96']);
    const byOthers = await t.gql(LISTS, {}, { token: pub });
    expect(ids(byOthers, 'likers')).toEqual(['95']);
    expect(ids(byOthers, 'reactors')).toEqual(['95']);
    const video = await t.gql(
      'query { entities(type: "video", ids: ["g-v"]) { ... on Video { likers(kind: FAV) { edges { node { id } } } } } }',
    );
    expect(errorCodes(video)).toEqual(['BAD_USER_INPUT']);
  });
  it("erases a user's relations on owner entities through the write path: every count exact", async () => {
    await register([comment('e-1', '1', '97'), { type: 'video', id: 'e-v', version: '1' }]);
    const [leaving, staying] = [await t.token(98), await t.token(99)];
    for (const token of [leaving, staying]) {
      await likeAndReact(token, { type: 'comment', id: 'e-1' }, { type: 'video', id: 'e-v', content: 'ROCKET' });
    }
    const erased = await t.gql('mutation { eraseAccount(input: { confirm: "98" }) { state } }', {}, { token: leaving });
    expect(erased.data.eraseAccount).toEqual({ state: 'ERASING' });
    await waitFor(
      () => t.app.deps.commands.accounts.status(98),
      (row) => row?.state === 'DONE',
      { what: 'the erasure', timeoutMs: 60_000 },
    );
    const since = Date.now();
    const READ = `query { c: entities(type: "comment", ids: ["e-1"]) { counts { likes asOf } } v: entities(type: "video", ids: ["e-v"]) { reactionGroups { content count } } }`;
    const after = await waitFor(
      () => t.gql(READ),
      (res) => Date.parse(res.data?.c?.[0]?.counts.asOf ?? '0') > since,
      { what: 'counts after the erasure' },
    );
    expect(after.data.c[0].counts.likes).toBe(1);
    expect(after.data.v[0].reactionGroups).toEqual([{ content: 'ROCKET', count: 1 }]);
    const received = () => t.app.deps.userCounters.load([97]).then(([c]) => c?.likesReceived ?? 0);
    await waitFor(received, (n) => n === 1, { what: "the owner's likesReceived back to the one left" });
  }, 90_000);
});

describe('reconciling entities a product owns', () => {
  it("finds an owner entity's drifted counters and repairs them from its facts", async () => {
    await register([comment('rc-1', '1', '71')]);
    const tokens = await Promise.all([311, 312, 313].map((u) => t.token(u)));
    for (const token of tokens)
      await likeAndReact(token, { type: 'comment', id: 'rc-1' }, { type: 'comment', id: 'rc-1', content: 'EYES' });
    const { id } = (await t.app.deps.entityCache.get('comment', 'rc-1'))!;
    const entity = { type: 'comment', id };
    await waitFor(
      () => t.app.db.relationFact.count({ where: { entityType: 'comment', entityId: id, active: true } }),
      (n) => n === 6,
      { what: 'persisted' },
    );
    await waitFor(
      () => t.app.deps.postCounters.loadEntities([entity]).then(([c]) => c?.slots[LIKE.slot!]),
      (n) => n === 3,
      { what: 'counted' },
    );
    await t.app.redis.set(t.app.keys.counters(entity), packCounters([9, 9, 0, 0, 0]));
    const report = await t.app.workers!.reconciler.run();
    expect(report.counterDrift).toContainEqual(entity);
    expect(report.factDrift).toEqual([]);
    const READ = `query { entities(type: "comment", ids: ["rc-1"]) { counts { likes } reactionGroups { content count } } }`;
    const repaired = await waitFor(
      () => t.gql(READ),
      (res) => res.data?.entities[0]?.counts.likes === 3,
      { what: 'the rebuild' },
    );
    expect(repaired.data.entities[0].reactionGroups).toEqual([{ content: 'EYES', count: 3 }]);
  }, 60_000);
});

describe('bookmarks of entities a product owns', () => {
  const BOOKMARK = `mutation($i: SetEntityBookmarkInput!) { setEntityBookmark(input: $i) { entity { id myState { bookmarked } } active changed } }`;
  const LIST = `query($type: String!, $first: Int, $after: String) {
    entityBookmarks(type: $type, first: $first, after: $after) { edges { cursor node { __typename id } } pageInfo { hasNextPage endCursor } } }`;
  const bookmark = (token: string, id: string, active = true, type = 'comment') => t.gql(BOOKMARK, { i: { type, id, active } }, { token });

  it("lists the viewer's own, newest first, to them alone; a deleted one leaves the list", async () => {
    await register(['bm-1', 'bm-2', 'bm-3', 'bm-4'].map((id) => comment(id)));
    const [owner, other] = [await t.token(401), await t.token(402)];
    for (const id of ['bm-1', 'bm-2', 'bm-3', 'bm-4']) expect((await bookmark(owner, id)).data.setEntityBookmark.changed).toBe(true);
    const again = await bookmark(owner, 'bm-2');
    expect(again.data.setEntityBookmark).toEqual({ entity: { id: 'bm-2', myState: { bookmarked: true } }, active: true, changed: false });
    expect((await bookmark(owner, 'bm-2', false)).data.setEntityBookmark.changed).toBe(true);
    await remove([{ type: 'comment', id: 'bm-4', version: '2' }]);

    // Lists are read from PostgreSQL: once the fact persister wrote every change above (a count
    // of 3 active bookmarks is also reached before bm-2's removal is written).
    await waitForPersister(t);
    const first = await t.gql(LIST, { type: 'comment', first: 1 }, { token: owner });
    expect(first.errors).toBeUndefined();
    expect(first.data.entityBookmarks.edges.map((e: any) => e.node)).toEqual([{ __typename: 'Comment', id: 'bm-3' }]);
    const rest = await t.gql(LIST, { type: 'comment', after: first.data.entityBookmarks.pageInfo.endCursor }, { token: owner });
    expect(rest.data.entityBookmarks.edges.map((e: any) => e.node.id)).toEqual(['bm-1']);
    expect(rest.data.entityBookmarks.pageInfo.hasNextPage).toBe(false);

    // Another user: their own (empty) list, no way to page the owner's, no trace in the entity's state.
    expect((await t.gql(LIST, { type: 'comment' }, { token: other })).data.entityBookmarks.edges).toEqual([]);
    const stolen = await t.gql(LIST, { type: 'comment', after: first.data.entityBookmarks.pageInfo.endCursor }, { token: other });
    expect(errorCodes(stolen)).toEqual(['BAD_USER_INPUT']);
    const seen = await t.gql(`query { entities(type: "comment", ids: ["bm-1"]) { myState { bookmarked } } }`, {}, { token: other });
    expect(seen.data.entities[0].myState).toEqual({ bookmarked: false });

    expect(errorCodes(await t.gql(LIST, { type: 'comment' }))).toEqual(['UNAUTHENTICATED']);
    expect(errorCodes(await t.gql(LIST, { type: 'video' }, { token: owner }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await bookmark(owner, 'v-1', true, 'video'))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await bookmark(owner, 'bm-4'))).toEqual(['NOT_FOUND']);
  });
});

describe("a user's lists of posts", () => {
  it('hold posts only, never an entity of another type that has the same id', async () => {
    await register([comment('same-id')]);
    const { id } = (await t.app.deps.entityCache.get('comment', 'same-id'))!;
    const posts = await t.createPosts(id);
    expect(posts).toContain(String(id)); // a post with the comment's id exists
    const token = await t.token(420);
    await likeAndReact(token, { type: 'comment', id: 'same-id' }, { type: 'comment', id: 'same-id', content: 'EYES' });
    await t.gql(`mutation { setEntityBookmark(input: { type: "comment", id: "same-id", active: true }) { changed } }`, {}, { token });
    await waitFor(
      () => t.app.db.relationFact.count({ where: { userId: 420, active: true } }),
      (n) => n === 3,
      { what: 'persisted' },
    );
    const lists = await t.gql(
      `query { viewer { likedPosts { edges { node { id } } } bookmarks { edges { node { id } } } } }`,
      {},
      { token },
    );
    expect(lists.errors).toBeUndefined();
    expect(lists.data.viewer).toEqual({ likedPosts: { edges: [] }, bookmarks: { edges: [] } });
  });
});
