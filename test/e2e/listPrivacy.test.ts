// Privacy of the relation lists, as a property: for random worlds (who likes, follows, keeps
// likes private, which posts get deleted), random page sizes and random viewers, what a viewer
// observes of a list — every node, every cursor, `hasNextPage`, how many edges a page holds —
// is a function of the items it may see and nothing else:
//   1. paging yields exactly the visible items, newest first, in full pages;
//   2. a page ending at the same visible item has the same cursor whatever hidden items exist
//      (checked by hiding and revealing items between two pagings).
// The counts are the exception on purpose (docs/api.md, "What counts reveal").
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BOOKMARK } from '../../src/domain/relations.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitForPersister } from '../support/settle.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ NODE_ENV: 'production' });
});
afterAll(() => t.stop());

const RUNS = 25;
let nextUser = 1000;
/** Fresh user ids for every run, so runs of one app never see each other's data. */
const freshUsers = (n: number) => Array.from({ length: n }, () => nextUser++);

const PAGE = 'edges { cursor node { id } } pageInfo { hasNextPage endCursor }';
const LISTS = {
  likers: `query($id: ID!, $first: Int, $after: String) { post(id: $id) { likers(first: $first, after: $after) { ${PAGE} } } }`,
  likedPosts: `query($id: ID!, $first: Int, $after: String) { user(id: $id) { likedPosts(first: $first, after: $after) { ${PAGE} } } }`,
  followers: `query($id: ID!, $first: Int, $after: String) { user(id: $id) { followers(first: $first, after: $after) { ${PAGE} } } }`,
  following: `query($id: ID!, $first: Int, $after: String) { user(id: $id) { following(first: $first, after: $after) { ${PAGE} } } }`,
  bookmarks: `query($id: ID!, $first: Int, $after: String) { user(id: $id) { bookmarks(first: $first, after: $after) { ${PAGE} } } }`,
};
type ListName = keyof typeof LISTS;

interface Page {
  ids: string[];
  cursors: string[];
  hasNextPage: boolean;
  endCursor: string | null;
}

async function gql(query: string, variables: Record<string, unknown>, token?: string) {
  const res = await t.gql(query, variables, token ? { token } : {});
  expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
  return res.data;
}

/** Every page of a list as `token` sees it. */
async function pages(list: ListName, id: string, first: number, token?: string): Promise<Page[]> {
  const out: Page[] = [];
  let after: string | null = null;
  do {
    const data = await gql(LISTS[list], { id, first, after }, token);
    const connection = (data.post ?? data.user)[list];
    out.push({
      ids: connection.edges.map((e: any) => e.node.id),
      cursors: connection.edges.map((e: any) => e.cursor),
      hasNextPage: connection.pageInfo.hasNextPage,
      endCursor: connection.pageInfo.endCursor,
    });
    after = connection.pageInfo.hasNextPage ? connection.pageInfo.endCursor : null;
    expect(out.length).toBeLessThan(100);
  } while (after);
  return out;
}

/** The ground truth: the list's active facts in PostgreSQL, newest first, before any filtering. */
async function facts(list: ListName, id: number): Promise<{ id: string; at: Date }[]> {
  const where =
    list === 'likers'
      ? { entityType: 'post', entityId: id, kind: 'like' }
      : list === 'followers'
        ? { entityType: 'user', entityId: id, kind: 'follow' }
        : { userId: id, kind: list === 'likedPosts' ? 'like' : list === 'bookmarks' ? BOOKMARK.name : 'follow' };
  const rows = await t.app.db.relationFact.findMany({ where: { ...where, active: true } });
  const other = (r: (typeof rows)[number]) => String(list === 'likers' || list === 'followers' ? r.userId : r.entityId);
  return rows
    .map((r) => ({ id: other(r), at: r.updatedAt }))
    .sort((a, b) => b.at.getTime() - a.at.getTime() || Number(b.id) - Number(a.id));
}

/** Property 1: the pages are the visible items in order, cut into full pages of `first`. */
function expectExactPages(got: Page[], visible: string[], first: number) {
  expect(got.flatMap((p) => p.ids)).toEqual(visible);
  got.forEach((page, i) => {
    const last = i === got.length - 1;
    expect(page.ids.length, `page ${i}`).toBe(last ? visible.length - i * first : first);
    expect(page.hasNextPage, `page ${i}`).toBe(!last);
    // A page's end is the cursor of its last edge: it names a visible item, nothing past it.
    expect(page.endCursor).toBe(page.cursors.at(-1) ?? null);
  });
}

/** Property 2: a visible item has one cursor, whatever is hidden around it. */
function expectSameCursors(a: Page[], b: Page[]) {
  const cursorOf = (pagesSeen: Page[]) => new Map(pagesSeen.flatMap((p) => p.ids.map((id, i) => [id, p.cursors[i]!] as const)));
  const [x, y] = [cursorOf(a), cursorOf(b)];
  for (const [id, cursor] of x) if (y.has(id)) expect(y.get(id), `cursor of ${id}`).toBe(cursor);
}

const setProfile = async (token: string, likesPublic: boolean) =>
  gql('mutation($p: Boolean) { updateProfile(input: { likesPublic: $p }) { id } }', { p: likesPublic }, token);
const setLike = (token: string, postId: string, active: boolean) =>
  gql(
    'mutation($p: ID!, $a: Boolean!) { setLikeRelation(input: { postId: $p, active: $a }) { changed } }',
    { p: postId, a: active },
    token,
  );
const setFollow = (token: string, userId: number, active: boolean) =>
  gql(
    'mutation($u: ID!, $a: Boolean!) { setFollowRelation(input: { userId: $u, active: $a }) { changed } }',
    { u: String(userId), a: active },
    token,
  );

const setBookmark = (token: string, postId: string, active: boolean) =>
  gql('mutation($p: ID!, $a: Boolean!) { setBookmark(input: { postId: $p, active: $a }) { changed } }', { p: postId, a: active }, token);

describe('what a viewer learns from a list', () => {
  it('User.bookmarks: the owner pages them exactly; anyone else learns nothing, from the list or from the posts', async () => {
    // Every field of a post another viewer can read (counts without asOf, which moves on its own).
    const POSTS = `query($ids: [ID!]!) { posts(ids: $ids) {
      id counts { likes favs } reactionGroups { content count viewerHasReacted } myState { liked faved reactions bookmarked }
      likers(first: 5) { ${PAGE} } author { counts { followings followers posts likesReceived favsReceived } }
    } }`;
    const refusal = async (id: number, token?: string) =>
      (await t.gql(LISTS.bookmarks, { id: String(id), first: 2 }, token ? { token } : {})).errors?.map((e) => [
        e.message,
        e.extensions?.code,
      ]);
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 6 }), // posts
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 16 }), // (post, bookmark/remove)
        fc.integer({ min: 1, max: 4 }),
        async (postCount, actions, first) => {
          const [owner, other, none] = freshUsers(3);
          const tokens = await Promise.all([owner!, other!, none!].map((u) => t.token(u)));
          for (const token of tokens) await gql('{ viewer { id } }', {}, token);
          const postIds = await t.createPosts(postCount, 1);
          const seen = () => Promise.all([gql(POSTS, { ids: postIds }, tokens[1]), gql(POSTS, { ids: postIds })]);
          const before = await seen();

          for (const [which, active] of actions) await setBookmark(tokens[0]!, postIds[which % postCount]!, active);
          await waitForPersister(t);
          const mine = await pages('bookmarks', String(owner), first, tokens[0]);
          expectExactPages(
            mine,
            (await facts('bookmarks', owner!)).map((f) => f.id),
            first,
          );
          // To another user and to no one, the posts read as before, and the owner's list is refused
          // as a list of someone who never bookmarked anything is.
          expect(await seen()).toEqual(before);
          for (const token of [tokens[1], undefined]) {
            expect(await refusal(owner!, token)).toEqual([['bookmarks are listed to their owner only', 'FORBIDDEN']]);
            expect(await refusal(owner!, token)).toEqual(await refusal(none!, token));
          }
        },
      ),
      { numRuns: RUNS },
    );
  }, 180_000);

  it('Post.likers: private likers leave no trace in pages or cursors, except to themselves', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.boolean(), { minLength: 2, maxLength: 9 }), // each user's likesPublic
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 24 }), // (user, like/unlike)
        fc.integer({ min: 1, max: 4 }),
        fc.option(fc.nat(), { nil: null }), // the viewer: a user of the world, or anonymous
        fc.nat(), // a user whose likesPublic flips between the two pagings
        async (publicFlags, actions, first, viewerPick, flipPick) => {
          const users = freshUsers(publicFlags.length);
          const tokens = await Promise.all(users.map((u) => t.token(u)));
          const [postId] = await t.createPosts(1);
          for (const [i, token] of tokens.entries()) await setProfile(token, publicFlags[i]!);
          for (const [who, active] of actions) await setLike(tokens[who % users.length]!, postId!, active);
          await waitForPersister(t);

          const viewer = viewerPick === null ? null : users[viewerPick % users.length]!;
          const token = viewer === null ? undefined : tokens[users.indexOf(viewer)];
          const isPublic = new Map(users.map((u, i) => [String(u), publicFlags[i]!]));
          const visible = async () =>
            (await facts('likers', Number(postId))).filter((f) => isPublic.get(f.id) || f.id === String(viewer)).map((f) => f.id);

          const before = await pages('likers', postId!, first, token);
          expectExactPages(before, await visible(), first);

          const flipped = flipPick % users.length;
          isPublic.set(String(users[flipped]), !publicFlags[flipped]);
          await setProfile(tokens[flipped]!, !publicFlags[flipped]);
          const after = await pages('likers', postId!, first, token);
          expectExactPages(after, await visible(), first);
          expectSameCursors(before, after);
        },
      ),
      { numRuns: RUNS },
    );
  }, 180_000);

  it('User.likedPosts: deleted posts leave no trace in pages or cursors', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 8 }), // posts
        fc.array(fc.tuple(fc.nat(), fc.boolean()), { minLength: 1, maxLength: 16 }), // (post, like/unlike)
        fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }), // which posts get deleted
        fc.integer({ min: 1, max: 4 }),
        fc.boolean(), // viewed by the user themself, or by someone else
        async (postCount, actions, deleted, first, bySelf) => {
          const [owner, other] = freshUsers(2);
          const [ownerToken, otherToken] = await Promise.all([t.token(owner!), t.token(other!)]);
          await setProfile(ownerToken, true);
          await gql('{ viewer { id } }', {}, otherToken);
          const postIds = await t.createPosts(postCount, 1);
          for (const [which, active] of actions) await setLike(ownerToken, postIds[which % postCount]!, active);
          await waitForPersister(t);
          const token = bySelf ? ownerToken : otherToken;

          const before = await pages('likedPosts', String(owner), first, token);
          expectExactPages(
            before,
            (await facts('likedPosts', owner!)).map((f) => f.id),
            first,
          );

          const author = await t.token(1);
          const gone = new Set(postIds.filter((_, i) => deleted[i]));
          for (const id of gone) await gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id }, author);
          const after = await pages('likedPosts', String(owner), first, token);
          expectExactPages(
            after,
            (await facts('likedPosts', owner!)).map((f) => f.id).filter((id) => !gone.has(id)),
            first,
          );
          expectSameCursors(before, after);
        },
      ),
      { numRuns: RUNS },
    );
  }, 180_000);

  it('User.followers and User.following: every follow shows, in full pages', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat(), fc.nat(), fc.boolean()), { minLength: 1, maxLength: 20 }), // (follower, followee, active)
        fc.integer({ min: 1, max: 4 }),
        async (actions, first) => {
          const users = freshUsers(5);
          const tokens = await Promise.all(users.map((u) => t.token(u)));
          for (const token of tokens) await gql('{ viewer { id } }', {}, token);
          for (const [a, b, active] of actions) {
            const [from, to] = [a % users.length, b % users.length];
            if (from !== to) await setFollow(tokens[from]!, users[to]!, active);
          }
          await waitForPersister(t);
          for (const user of users) {
            for (const list of ['followers', 'following'] as const) {
              const expected = (await facts(list, user)).map((f) => f.id);
              expectExactPages(await pages(list, String(user), first), expected, first);
            }
          }
        },
      ),
      { numRuns: Math.ceil(RUNS / 2) },
    );
  }, 180_000);
});
