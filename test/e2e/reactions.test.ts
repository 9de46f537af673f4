import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_REACTIONS } from '../../src/domain/relations.js';
import { META } from '../../src/redis/keys.js';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { connectLive, onServer } from '../support/liveClient.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

const REACT = `mutation($input: SetReactionInput!) {
  setReaction(input: $input) { content active changed post { id myState { reactions } reactionGroups { content count viewerHasReacted } } }
}`;
const READ = `query($id: ID!) { post(id: $id) {
  counts { likes asOf } reactionGroups { content emoji count viewerHasReacted } myState { liked reactions bookmarked }
} }`;

async function newPost(): Promise<string> {
  return (await t.createPosts(1, 1))[0]!;
}
const react = (token: string, input: Record<string, unknown>) => t.gql(REACT, { input }, { token });
const read = async (id: string, token?: string) => (await t.gql(READ, { id }, token ? { token } : {})).data.post;
/** The post once its counts include every change acknowledged before now. */
const settled = async (id: string, token?: string) => {
  const since = Date.now();
  return waitFor(
    () => read(id, token),
    (post) => post.counts.asOf !== null && Date.parse(post.counts.asOf) > since,
    { what: `asOf after ${since}` },
  );
};
const groups = (post: { reactionGroups: { content: string; count: number }[] }) =>
  post.reactionGroups.map((g) => `${g.content}:${g.count}`);

describe('reactions', () => {
  it('lists the registry: GitHub’s eight, in order', async () => {
    const res = await t.gql('{ reactionKinds { content emoji } }');
    expect(res.data.reactionKinds).toEqual(DEFAULT_REACTIONS.map(({ content, emoji }) => ({ content, emoji })));
  });

  it('counts several kinds per user, in registry order, with each viewer’s own', async () => {
    const postId = await newPost();
    const [ada, bob] = [await t.token(601), await t.token(602)];
    for (const content of ['HEART', 'THUMBS_UP']) {
      expect((await react(ada, { postId, content, active: true })).data.setReaction).toMatchObject({
        content,
        active: true,
        changed: true,
      });
    }
    await react(bob, { postId, content: 'HEART', active: true });
    await react(bob, { postId, content: 'EYES', active: true });
    await react(bob, { postId, content: 'EYES', active: false });

    const asAda = await settled(postId, ada);
    expect(groups(asAda)).toEqual(['THUMBS_UP:1', 'HEART:2']);
    expect(asAda.reactionGroups.map((g: { viewerHasReacted: boolean }) => g.viewerHasReacted)).toEqual([true, true]);
    expect(asAda.reactionGroups[1]).toMatchObject({ emoji: '❤️' });
    expect(asAda.myState).toEqual({ liked: false, reactions: ['THUMBS_UP', 'HEART'], bookmarked: false });
    const asBob = await read(postId, bob);
    expect(asBob.reactionGroups.map((g: { viewerHasReacted: boolean }) => g.viewerHasReacted)).toEqual([false, true]);
    const anonymous = await read(postId);
    expect(groups(anonymous)).toEqual(['THUMBS_UP:1', 'HEART:2']);
    expect(anonymous.myState).toBeNull();
    // Reactions are not likes.
    expect(asAda.counts.likes).toBe(0);
  });

  it('shows the viewer’s reaction at once, before its count includes it; the payload carries the post', async () => {
    const postId = await newPost();
    const token = await t.token(603);
    const set = (await react(token, { postId, content: 'ROCKET', active: true })).data.setReaction;
    expect(set.post.myState.reactions).toEqual(['ROCKET']);
    expect(set.post.reactionGroups).toContainEqual(expect.objectContaining({ content: 'ROCKET', viewerHasReacted: true }));
    expect(groups(await settled(postId, token))).toEqual(['ROCKET:1']);
    await react(token, { postId, content: 'ROCKET', active: false });
    expect((await settled(postId, token)).reactionGroups).toEqual([]);
  });

  it('answers myState for exactly what each selection shows, through fragments and merged fields', async () => {
    // Viewer state is read for the kinds a selection shows: each must still come out right.
    const id = await newPost();
    const token = await t.token(31);
    const mutate = (query: string) => t.gql(query, { id }, { token });
    await mutate('mutation($id: ID!) { setLikeRelation(input: { postId: $id, kind: FAV, active: true }) { changed } }');
    await mutate('mutation($id: ID!) { setBookmark(input: { postId: $id, active: true }) { changed } }');
    await react(token, { postId: id, content: 'HEART', active: true });
    const res = await t.gql(
      `query($id: ID!) { post(id: $id) {
        a: myState { liked }
        b: myState { ...S }
        myState { faved }
        myState { bookmarked __typename }
        reactionGroups { content viewerHasReacted }
      } }
      fragment S on PostViewerState { reactions ... on PostViewerState { faved } }`,
      { id },
      { token },
    );
    expect(res.errors).toBeUndefined();
    expect(res.data.post).toEqual({
      a: { liked: false },
      b: { reactions: ['HEART'], faved: true },
      myState: { faved: true, bookmarked: true, __typename: 'PostViewerState' },
      reactionGroups: [{ content: 'HEART', viewerHasReacted: true }],
    });
  });

  it('takes the desired state with setLikeRelation’s idempotency', async () => {
    const postId = await newPost();
    const token = await t.token(604);
    const input = { postId, content: 'LAUGH', active: true, idempotencyKey: 'tap-laugh-1' };
    expect((await react(token, input)).data.setReaction.changed).toBe(true);
    expect((await react(token, input)).data.setReaction.changed).toBe(true); // the first answer, again
    expect((await react(token, { postId, content: 'LAUGH', active: true })).data.setReaction.changed).toBe(false);
    expect(errorCodes(await react(token, { ...input, content: 'HOORAY' }))).toEqual(['CONFLICT']);
    expect(groups(await settled(postId))).toEqual(['LAUGH:1']);
  });

  it('refuses an unregistered content naming the valid ones, missing posts and anonymous callers', async () => {
    const token = await t.token(605);
    const postId = await newPost();
    const bad = await react(token, { postId, content: 'LOVE', active: true });
    expect(errorCodes(bad)).toEqual(['BAD_USER_INPUT']);
    expect(bad.errors![0]!.message).toContain(DEFAULT_REACTIONS.map((r) => r.content).join(', '));
    expect(errorCodes(await react(token, { postId: '987654321', content: 'HEART', active: true }))).toEqual(['NOT_FOUND']);
    expect(errorCodes(await t.gql(REACT, { input: { postId, content: 'HEART', active: true } }))).toEqual(['UNAUTHENTICATED']);
    const reactors = await t.gql('query($id: ID!) { post(id: $id) { reactors(content: "LOVE") { edges { cursor } } } }', { id: postId });
    expect(errorCodes(reactors)).toEqual(['BAD_USER_INPUT']);
  });

  it('lists who reacted with likers’ privacy: a private user is counted, listed only to themselves', async () => {
    const postId = await newPost();
    const [open, hidden] = [await t.token(606), await t.token(607)];
    await t.gql('mutation { updateProfile(input: { likesPublic: true }) { id } }', {}, { token: open });
    await react(open, { postId, content: 'HOORAY', active: true });
    await react(hidden, { postId, content: 'HOORAY', active: true });
    expect(groups(await settled(postId))).toEqual(['HOORAY:2']);
    const REACTORS = 'query($id: ID!) { post(id: $id) { reactors(content: "HOORAY") { edges { node { id } } } } }';
    const ids = async (token?: string) =>
      (await t.gql(REACTORS, { id: postId }, token ? { token } : {})).data.post.reactors.edges.map(
        (e: { node: { id: string } }) => e.node.id,
      );
    // The list follows PostgreSQL's facts (the persister's lag); newest first.
    expect(
      await waitFor(
        () => ids(hidden),
        (l) => l.length === 2,
        { what: 'both reactors persisted' },
      ),
    ).toEqual(['607', '606']);
    expect(await ids()).toEqual(['606']);
    expect(await ids(open)).toEqual(['606']);
  });

  it('reactions from before the reaction index read the same, and the workers index them', async () => {
    const postId = await newPost();
    const users = [611, 612, 613];
    const tokens = await Promise.all(users.map((u) => t.token(u)));
    await react(tokens[0]!, { postId, content: 'HEART', active: true });
    await react(tokens[0]!, { postId, content: 'EYES', active: true });
    await react(tokens[1]!, { postId, content: 'LAUGH', active: true });
    const mine = () => Promise.all(tokens.map(async (token) => (await read(postId, token)).myState.reactions));
    const before = await mine();
    expect(before).toEqual([['HEART', 'EYES'], ['LAUGH'], []]);

    // As a deployment upgraded from a version without the index holds them (docs/design.md).
    const { redis, keys } = t.app;
    const index = keys.reactionIndex({ type: 'post', id: Number(postId) });
    const marks = Array.from({ length: keys.partitions }, (_, p) => keys.reactionsIndexed(p));
    await redis.del(...marks);
    await redis.hdel(keys.meta(), META.reactionIndex);
    await redis.del(index);
    expect(await mine()).toEqual(before);

    await waitFor(
      () => redis.hget(keys.meta(), META.reactionIndex),
      (state) => state === 'whole',
      { what: 'the workers to build the reaction index' },
    );
    expect(await redis.exists(index, ...marks)).toBe(1 + marks.length);
    expect(await mine()).toEqual(before);
  });
});

describe('bookmarks', () => {
  const BOOKMARK =
    'mutation($input: SetBookmarkInput!) { setBookmark(input: $input) { active changed post { id myState { bookmarked } } } }';
  const BOOKMARKS = 'query($id: ID!) { user(id: $id) { bookmarks(first: 10) { edges { node { id } } } } }';

  it('are the owner’s alone: no count, no list, no state for anyone else', async () => {
    const [first, second] = await t.createPosts(2, 1);
    const token = await t.token(608);
    const other = await t.token(609);
    const set = (postId: string, active: boolean) => t.gql(BOOKMARK, { input: { postId, active } }, { token });
    expect((await set(first!, true)).data.setBookmark).toMatchObject({
      active: true,
      changed: true,
      post: { myState: { bookmarked: true } },
    });
    expect((await set(first!, true)).data.setBookmark.changed).toBe(false);
    await set(second!, true);

    const mine = async () =>
      (await t.gql(BOOKMARKS, { id: '608' }, { token })).data.user.bookmarks.edges.map((e: { node: { id: string } }) => e.node.id);
    expect(await waitFor(mine, (l) => l.length === 2, { what: 'both bookmarks persisted' })).toEqual([second, first]);
    // Nobody else may list them, whether there are any or not.
    for (const as of [{ token: other }, {}]) {
      expect(errorCodes(await t.gql(BOOKMARKS, { id: '608' }, as))).toEqual(['FORBIDDEN']);
      expect(errorCodes(await t.gql(BOOKMARKS, { id: '1' }, as))).toEqual(['FORBIDDEN']);
    }
    const seen = await settled(first!, other);
    expect(seen).toMatchObject({ counts: { likes: 0 }, reactionGroups: [], myState: { bookmarked: false } });
    expect((await read(first!, token)).myState.bookmarked).toBe(true);

    await set(first!, false);
    expect(await waitFor(mine, (l) => l.length === 1, { what: 'the removal persisted' })).toEqual([second]);
    expect(errorCodes(await t.gql(BOOKMARK, { input: { postId: '987654321', active: true } }, { token }))).toEqual(['NOT_FOUND']);
  });

  it('push nothing: the first push a watcher gets after a bookmark is the next like’s', async () => {
    const [postId] = await t.createPosts(1, 1);
    const live = connectLive(t.url);
    try {
      const watch = await onServer(t.url, 1, () =>
        live.subscribe('subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes } } }', { ids: [postId] }),
      );
      await t.gql(BOOKMARK, { input: { postId, active: true } }, { token: await t.token(611) });
      await t.gql(
        'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
        { id: postId },
        { token: await t.token(612) },
      );
      await waitFor(
        async () => watch.received.length,
        (n) => n > 0,
        { what: 'a push' },
      );
      expect(watch.received[0]!.data.postCountsChanged.counts).toEqual({ likes: 1 });
    } finally {
      await live.dispose();
    }
  });
});
