// A feed to measure: `count` posts by 4 authors; the viewer likes every third post,
// favourites every fifth, reacts ❤️ to every seventh and bookmarks every sixth, and 0–3 other
// users like each post, the first of them also with 👍 on every other post. Used where a test counts what
// a feed page costs (single Redis and Cluster alike).
import type { TestApp } from './app.js';

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const REACT = 'mutation($i: SetReactionInput!) { setReaction(input: $i) { changed } }';
const BOOKMARK = 'mutation($i: SetBookmarkInput!) { setBookmark(input: $i) { changed } }';

/** How many likes post `i` of the world has. */
export const expectedLikes = (i: number) => (i % 3 === 0 ? 1 : 0) + (i % 4);
export const expectedFavs = (i: number) => (i % 5 === 0 ? 1 : 0);
/** Post `i`'s reaction groups as the viewer sees them. */
export const expectedReactionGroups = (i: number) => [
  ...(i % 2 === 0 && i % 4 > 0 ? [{ content: 'THUMBS_UP', count: 1, viewerHasReacted: false }] : []),
  ...(i % 7 === 0 ? [{ content: 'HEART', count: 1, viewerHasReacted: true }] : []),
];
/** The viewer's own state on post `i`. */
export const expectedViewerState = (i: number) => ({
  liked: i % 3 === 0,
  faved: i % 5 === 0,
  reactions: i % 7 === 0 ? ['HEART'] : [],
  bookmarked: i % 6 === 0,
});

export async function seedFeedWorld(t: TestApp, count: number, ids: { viewer: number; authors: number[] }) {
  const viewer = await t.token(ids.viewer, { name: 'Viewer' });
  const authors = await Promise.all(ids.authors.map((id) => t.token(id, { name: `Author ${id}` })));
  const postIds: string[] = [];
  for (let i = 0; i < count; i++) {
    const res = await t.gql(
      'mutation($t: String!) { createPost(input: { title: $t, body: "b" }) { id } }',
      { t: `p${i}` },
      { token: authors[i % authors.length]! },
    );
    postIds.push(res.data.createPost.id);
  }
  const others = await Promise.all([20, 21, 22].map((id) => t.token(id)));
  await Promise.all(
    postIds.flatMap((postId, i) => [
      ...(i % 3 === 0 ? [t.gql(SET, { i: { postId, active: true } }, { token: viewer })] : []),
      ...(i % 5 === 0 ? [t.gql(SET, { i: { postId, active: true, kind: 'FAV' } }, { token: viewer })] : []),
      ...others.slice(0, i % 4).map((token) => t.gql(SET, { i: { postId, active: true } }, { token })),
      ...(i % 7 === 0 ? [t.gql(REACT, { i: { postId, content: 'HEART', active: true } }, { token: viewer })] : []),
      ...(i % 6 === 0 ? [t.gql(BOOKMARK, { i: { postId, active: true } }, { token: viewer })] : []),
      ...(i % 2 === 0 && i % 4 > 0 ? [t.gql(REACT, { i: { postId, content: 'THUMBS_UP', active: true } }, { token: others[0]! })] : []),
    ]),
  );
  return { viewer, postIds };
}
