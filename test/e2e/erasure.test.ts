// Account erasure against a whole Tally: a user with likes, favourites, reactions, bookmarks,
// follows both ways and posts of their own is erased while others keep liking and reacting to
// the same posts. Afterwards every post
// and user counter equals a recount from the surviving facts, no list shows the user, their
// token is dead and their rows are gone; neither a replay of the event log nor a recovery of
// Redis from PostgreSQL brings them back; a second erasure changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createUserCounterStore } from '../../src/db/userCounters.js';
import { KINDS } from '../../src/domain/kinds.js';
import { LIKE as LIKE_RELATION } from '../../src/domain/relations.js';
import { errorCodes, startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { spawnTsx } from '../support/process.js';
import { loseKeys } from '../support/redis.js';
import { waitForPersister } from '../support/settle.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
/** A second API process of the same deployment on the other executor (graphql-js; `t` runs graphql-jit). */
let js: TestApp;
const ERASED = 500;
const AUTHOR = 501;
const OTHERS = Array.from({ length: 12 }, (_, i) => 600 + i);

beforeAll(async () => {
  // Small batches: the erasure takes many of them, as a heavy user's would.
  const erasure = { ERASURE_BATCH_SIZE: '7', ERASURE_BUSY_PERCENT: '100', ERASURE_REFRESH_MS: '1500' };
  t = await startTestApp({ ...erasure, GRAPHQL_EXECUTOR: 'jit' });
  js = await startTestApp({ ...erasure, GRAPHQL_EXECUTOR: 'graphql-js' }, { sharing: t });
});
afterAll(async () => {
  await js.stop();
  await t.stop();
});

const LIKE = 'mutation($id: ID!, $kind: RelationKind!) { setLikeRelation(input: { postId: $id, kind: $kind, active: true }) { changed } }';
const FOLLOW = 'mutation($id: ID!) { setFollowRelation(input: { userId: $id, active: true }) { changed } }';
const REACT = 'mutation($id: ID!, $c: String!) { setReaction(input: { postId: $id, content: $c, active: true }) { changed } }';
const BOOKMARK = 'mutation($id: ID!) { setBookmark(input: { postId: $id, active: true }) { changed } }';
/** What a post's counts show: likes, favourites and its reaction groups. */
const COUNTS = 'query($ids: [ID!]!) { posts(ids: $ids) { counts { likes favs asOf } reactionGroups { content count } } }';
const shown = (posts: any[]) => posts.map((p) => ({ likes: p.counts.likes, favs: p.counts.favs, reactions: p.reactionGroups }));
const ERASE = 'mutation($confirm: String!) { eraseAccount(input: { confirm: $confirm }) { userId state } }';

async function as(userId: number, query: string, variables: Record<string, unknown> = {}) {
  const res = await t.gql(query, variables, { token: await t.token(userId) });
  expect(res.errors).toBeUndefined();
  return res.data;
}

/** The environment of a CLI run against the test app's stores. */
const cliEnv = () => ({
  DATABASE_URL: t.db.url,
  REDIS_URL: TEST_REDIS_URL,
  REDIS_KEY_PREFIX: t.app.config.redisKeyPrefix,
  JWT_SECRET: TEST_JWT_SECRET,
  LOG_LEVEL: 'silent',
});

/** Active facts in PostgreSQL per post and relation (but `except`'s): the truth counters must equal. */
async function recount(postIds: string[], except?: number) {
  const rows = await t.app.db.relationFact.groupBy({
    by: ['entityId', 'kind'],
    where: {
      entityType: 'post',
      entityId: { in: postIds.map(BigInt) },
      active: true,
      ...(except === undefined ? {} : { userId: { not: except } }),
    },
    _count: { _all: true },
  });
  const of = (id: string, kind: string) => rows.find((r) => String(r.entityId) === id && r.kind === kind)?._count._all ?? 0;
  return postIds.map((id) => ({
    likes: of(id, 'like'),
    favs: of(id, 'fav'),
    reactions: KINDS.reactions.map((kind) => ({ content: kind.reaction!.content, count: of(id, kind.name) })).filter((g) => g.count > 0),
  }));
}

describe('eraseAccount', () => {
  it('refuses a confirm that is not the viewer’s own id, and changes nothing', async () => {
    const res = await t.gql(ERASE, { confirm: '1' }, { token: await t.token(ERASED) });
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(await t.app.deps.commands.accounts.status(ERASED)).toBeNull();
  });

  it('erases a user with likes, favourites, reactions, bookmarks, follows both ways and posts, while others keep liking; every count stays exact', async () => {
    for (const user of OTHERS) await as(user, '{ viewer { id } }'); // users exist once seen
    await as(ERASED, 'mutation { updateProfile(input: { likesPublic: true }) { id } }'); // on likers lists
    const posts = await t.createPosts(30, AUTHOR);
    const own = await t.createPosts(4, ERASED);
    for (const [i, id] of posts.entries()) {
      await as(ERASED, LIKE, { id, kind: 'LIKE' });
      if (i % 3 === 0) await as(ERASED, LIKE, { id, kind: 'FAV' });
      await as(ERASED, REACT, { id, c: 'HEART' });
      if (i % 4 === 0) await as(ERASED, REACT, { id, c: 'ROCKET' });
      await as(ERASED, BOOKMARK, { id });
    }
    for (const other of OTHERS) {
      await as(ERASED, FOLLOW, { id: String(other) });
      await as(other, FOLLOW, { id: String(ERASED) });
      for (const id of own) await as(other, LIKE, { id, kind: 'LIKE' });
    }
    // They viewed every post: the window record names them until the erasure.
    await as(ERASED, 'mutation($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }', { ids: posts });
    expect(await t.app.redis.exists(t.app.keys.viewWindow(ERASED))).toBe(1);
    await waitForPersister(t);

    // Others keep liking the same posts while the erasure runs.
    let liking = true;
    const background = (async () => {
      for (let round = 0; liking; round++) {
        const user = OTHERS[round % OTHERS.length]!;
        await as(user, LIKE, { id: posts[round % posts.length], kind: round % 2 ? 'LIKE' : 'FAV' });
        if (round % 3 === 0) await as(user, REACT, { id: posts[round % posts.length], c: round % 2 ? 'HEART' : 'EYES' });
      }
    })();
    background.catch(() => {}); // a failure shows below, where it is awaited

    const readLists = () =>
      t.gql(
        `query($u: ID!, $p: ID!) {
        user(id: $u) { id }
        other: user(id: "${OTHERS[0]}") { followers(first: 20) { edges { node { id } } } following(first: 20) { edges { node { id } } } }
        post(id: $p) { likers(first: 20) { edges { node { id } } } }
        mine: post(id: "${own[0]}") { id }
      }`,
        { u: String(ERASED), p: posts[0] },
      );
    // Before: the user is on every one of these lists.
    const before = await readLists();
    expect(before.data.user).toEqual({ id: String(ERASED) });
    expect(before.data.mine).toEqual({ id: own[0] });
    for (const list of [before.data.other.followers, before.data.other.following, before.data.post.likers]) {
      expect(list.edges.map((e: any) => e.node.id)).toContain(String(ERASED));
    }

    const started = await as(ERASED, ERASE, { confirm: String(ERASED) });
    expect(started.eraseAccount).toEqual({ userId: String(ERASED), state: 'ERASING' });
    // At once: the token is dead, and the user is on no list and authors nothing.
    const dead = await t.gql('{ viewer { id } }', {}, { token: await t.token(ERASED) });
    expect(errorCodes(dead)).toEqual(['UNAUTHENTICATED']);
    // Except for a retry of the erasure (its answer was lost on a bad network): the same
    // erasure, on either executor; anything beside it refuses the whole request (401).
    const token = await t.token(ERASED);
    await waitFor(
      () => js.gql('{ viewer { id } }', {}, { token }),
      (res) => errorCodes(res)[0] === 'UNAUTHENTICATED',
      { what: 'the other API process to hear of the erasure', timeoutMs: 5_000 },
    );
    for (const api of [t, js]) {
      const retried = await api.gql(ERASE, { confirm: String(ERASED) }, { token });
      expect(retried.status).toBe(200);
      expect(retried.data.eraseAccount).toEqual({ userId: String(ERASED), state: 'ERASING' });
      const smuggled = await api.gql(
        `mutation($c: String!, $p: ID!) {
          eraseAccount(input: { confirm: $c }) { state }
          setLikeRelation(input: { postId: $p, kind: LIKE, active: false }) { changed }
        }`,
        { c: String(ERASED), p: posts[1] },
        { token },
      );
      expect(smuggled.status).toBe(401);
      expect(smuggled.data).toBeUndefined();
      expect(errorCodes(smuggled)).toEqual(['UNAUTHENTICATED']);
      expect(smuggled.errors![0]!.message).toBe('this account was erased');
    }
    const lists = await readLists();
    expect(lists.errors).toBeUndefined();
    expect(lists.data.user).toBeNull();
    expect(lists.data.mine).toBeNull();
    const ids = JSON.stringify(lists.data);
    expect(ids).not.toContain(`"${ERASED}"`);

    await waitFor(
      () => t.app.deps.commands.accounts.status(ERASED),
      (row) => row?.state === 'DONE',
      {
        what: 'the erasure to finish',
        timeoutMs: 60_000,
      },
    );
    liking = false;
    await background;
    await waitForPersister(t);

    // Every post's counters equal the surviving facts, once the counts cover everything so far.
    const since = Date.now();
    const read = await waitFor(
      async () => (await t.gql(COUNTS, { ids: posts })).data.posts,
      (rows: any[]) => rows.every((p) => p.counts.asOf && Date.parse(p.counts.asOf) > since),
      { what: 'counts after the erasure', timeoutMs: 10_000 },
    );
    expect(shown(read)).toEqual(await recount(posts));

    // Every other user's counters equal a recount from the base tables.
    const store = createUserCounterStore(t.app.db);
    const { stored, actual } = await store.snapshot([AUTHOR, ...OTHERS]);
    for (const row of stored) expect({ ...row, version: undefined, userId: undefined }).toMatchObject(actual.get(row.userId)!);
    expect(actual.get(OTHERS[0]!)).toMatchObject({ followers: 0, followings: 0 });

    // Nothing of the user is left but the erasure list's row.
    const db = t.app.db;
    expect(await db.user.count({ where: { id: ERASED } })).toBe(0);
    expect(await db.userCounters.count({ where: { userId: ERASED } })).toBe(0);
    expect(await db.post.count({ where: { authorId: ERASED } })).toBe(0);
    expect(await db.relationFact.count({ where: { OR: [{ userId: ERASED }, { entityType: 'user', entityId: ERASED }] } })).toBe(0);
    expect(await t.app.redis.exists(t.app.keys.userCounters(ERASED))).toBe(0);
    // Their views stay counted (an erasure moves no count), and nothing names them any more.
    const viewed = await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { views { total unique } } }', { ids: posts });
    expect(viewed.data.posts.map((p: { views: unknown }) => p.views)).toEqual(posts.map(() => ({ total: 1, unique: 1 })));
    expect(await t.app.redis.exists(t.app.keys.viewWindow(ERASED))).toBe(0);

    // Nothing brings them back: a replay of the whole event history counts none of their
    // events, and a restore from PostgreSQL copies none of their facts.
    const replay = spawnTsx('src/cli/replay.ts', [], cliEnv());
    expect(await replay.exited).toBe(0);
    const replayed = await t.gql(COUNTS, { ids: posts });
    expect(shown(replayed.data.posts)).toEqual(await recount(posts));
    // A fact of theirs left behind (say by a restore of an old backup) is never copied back:
    // Redis loses everything and `npm run recover` rebuilds it from PostgreSQL.
    const leftover = {
      userId: ERASED,
      entityType: 'post',
      entityId: BigInt(posts[0]!),
      kind: 'like',
      active: true,
      version: 1n,
      updatedAt: new Date(),
    };
    await t.app.db.relationFact.create({ data: leftover });
    await loseKeys(t.app.config.redisKeyPrefix);
    const lostAt = Date.now();
    const recover = spawnTsx('src/cli/recover.ts', [], cliEnv());
    expect(await recover.exited).toBe(0);
    const recovered = await waitFor(
      async () => (await t.gql(COUNTS, { ids: posts })).data.posts,
      (rows: any[]) => rows.every((p) => p.counts.asOf && Date.parse(p.counts.asOf) > lostAt),
      { what: 'counts served from the recovered Redis', timeoutMs: 30_000 },
    );
    const withoutThem = await recount(posts, ERASED);
    expect(withoutThem).not.toEqual(await recount(posts)); // the leftover is there to be left out
    expect(shown(recovered)).toEqual(withoutThem);
    const likers = await t.gql('query($p: ID!) { post(id: $p) { likers(first: 50) { edges { node { id } } } } }', { p: posts[0] });
    expect(likers.data.post.likers.edges.map((e: any) => e.node.id)).not.toContain(String(ERASED));
    await t.app.db.relationFact.deleteMany({ where: { userId: ERASED } });

    // A second erasure is the same erasure.
    const again = await t.app.deps.commands.accounts.eraseAsOperator(ERASED);
    expect(again).toMatchObject({ userId: ERASED, state: 'DONE', started: false });
    const retriedLate = await as(ERASED, ERASE, { confirm: String(ERASED) });
    expect(retriedLate.eraseAccount).toEqual({ userId: String(ERASED), state: 'DONE' });
    // The token still verifies as a JWT, but the account never comes back.
    expect(errorCodes(await t.gql('{ viewer { id } }', {}, { token: await t.token(ERASED) }))).toEqual(['UNAUTHENTICATED']);
  }, 120_000);

  it('erases a user who never did anything', async () => {
    await as(700, '{ viewer { id } }');
    const res = await as(700, ERASE, { confirm: '700' });
    expect(res.eraseAccount.state).toBe('ERASING');
    await waitFor(
      () => t.app.deps.commands.accounts.status(700),
      (row) => row?.state === 'DONE',
      { what: 'done', timeoutMs: 30_000 },
    );
    expect(await t.app.db.user.count({ where: { id: 700 } })).toBe(0);
  });

  it('also undoes a like that an API process accepted on their post before it heard of the erasure', async () => {
    const [post] = await t.createPosts(1, 710);
    await as(710, ERASE, { confirm: '710' });
    // A process that missed the announcement learns within ERASURE_REFRESH_MS (1.5 s here);
    // until then it still takes likes on the user's posts. Its like lands 0.7 s in, past the
    // moment an empty erasure would otherwise be over.
    await new Promise((r) => setTimeout(r, 700));
    const lagging = await t.app.deps.relations.setFact({
      userId: 711,
      entity: { type: 'post', id: Number(post) },
      relation: LIKE_RELATION,
      authorId: 710,
      active: true,
    });
    expect(lagging.changed).toBe(true);
    await waitFor(
      () => t.app.deps.commands.accounts.status(710),
      (row) => row?.state === 'DONE',
      { what: 'done', timeoutMs: 30_000 },
    );
    await waitForPersister(t);
    // The like moved the author's likesReceived: had it landed after the rows were deleted,
    // it would have written the erased user's counters row again.
    expect(await t.app.db.userCounters.count({ where: { userId: 710 } })).toBe(0);
    expect(await t.app.db.user.count({ where: { id: 710 } })).toBe(0);
    expect(await t.app.db.post.count({ where: { authorId: 710 } })).toBe(0);
  });

  it('npm run erase: --dry-run says what would change, then erases; --status follows it to the end', async () => {
    const env = cliEnv();
    const [postId] = await t.createPosts(1, AUTHOR);
    await as(800, LIKE, { id: postId, kind: 'LIKE' });
    await as(800, FOLLOW, { id: String(AUTHOR) });
    await t.createPosts(2, 800);
    await waitForPersister(t);

    const dryRun = spawnTsx('src/cli/erase.ts', ['--dry-run', '800'], env);
    expect(await dryRun.exited).toBe(0);
    expect(JSON.parse(dryRun.output())).toEqual({
      userId: 800,
      erasure: 'none',
      wouldDelete: { posts: 2 },
      wouldUndo: { like: 1, follow: 1, followers: 0 },
    });
    expect(await t.app.deps.commands.accounts.status(800)).toBeNull(); // nothing changed

    const erase = spawnTsx('src/cli/erase.ts', ['800'], env);
    expect(await erase.exited).toBe(0);
    expect(erase.output()).toContain('user 800: ERASING');
    const status = spawnTsx('src/cli/erase.ts', ['--status'], env);
    expect(await status.exited).toBe(0);
    expect(status.output()).toMatch(/every erasure has finished|no erasure is running/);
    expect((await t.app.deps.commands.accounts.status(800))?.state).toBe('DONE');
    expect(errorCodes(await t.gql('{ viewer { id } }', {}, { token: await t.token(800) }))).toEqual(['UNAUTHENTICATED']);

    const usage = spawnTsx('src/cli/erase.ts', ['x'], env);
    expect(await usage.exited).toBe(2);
  }, 60_000);
});

describe('eraseAccount retries', () => {
  it('answers DONE to a retry on an API process started after the erasure, and charges every retry a writes token', async () => {
    const USER = 900;
    const env = { RATE_LIMIT_WRITES: '3', RATE_LIMIT_WRITES_WINDOW_MS: '600000', ERASURE_BUSY_PERCENT: '100' };
    const first = await startTestApp(env);
    let later: TestApp | null = null;
    try {
      const token = await first.token(USER);
      const erased = await first.gql(ERASE, { confirm: String(USER) }, { token });
      expect(erased.data.eraseAccount.state).toMatch(/ERASING|DONE/);
      await waitFor(
        async () => (await first.app.deps.commands.accounts.status(USER))?.state,
        (state) => state === 'DONE',
        { what: 'the erasure done', timeoutMs: 30_000 },
      );
      // A process that never heard the announcement (a restart): the retry still learns DONE.
      later = await startTestApp(env, { sharing: first });
      const retried = await later.gql(ERASE, { confirm: String(USER) }, { token });
      expect(retried.status).toBe(200);
      expect(retried.data.eraseAccount).toEqual({ userId: String(USER), state: 'DONE' });
      // Anything else with the token is still refused as a whole.
      expect((await later.gql('{ viewer { id } }', {}, { token })).status).toBe(401);
      // Three writes tokens: the erasure, the retry above, one more; the next is refused.
      expect((await later.gql(ERASE, { confirm: String(USER) }, { token })).data.eraseAccount.state).toBe('DONE');
      expect(errorCodes(await later.gql(ERASE, { confirm: String(USER) }, { token }))).toEqual(['RATE_LIMITED']);
    } finally {
      await later?.stop();
      await first.stop();
    }
  }, 60_000);
});
