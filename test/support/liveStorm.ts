// The live counts storm: sockets watch some posts while many users like them over HTTP. Every
// socket must end on each post's exact count, with at most one push per flush pass (each
// push of a post covers a later instant than the one before, and counts only grow here).
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { connectLive, type LiveClient, onServer } from './liveClient.js';
import { waitFor } from './wait.js';

const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id title counts { likes favs asOf } } }';
const LIKE = 'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }';

export async function runLiveStorm(t: TestApp, options: { sockets: number; posts: number; likers: number }): Promise<void> {
  const postIds = await t.createPosts(options.posts);
  const clients: LiveClient[] = [];
  try {
    // One viewer per socket, as on phones (anonymous sockets share one address's connection limit).
    const tokens = await Promise.all(Array.from({ length: options.sockets }, (_, i) => t.token(20_000 + i)));
    const watches = await onServer(t.url, options.sockets, () =>
      tokens.map((token) => {
        const client = connectLive(t.url, { token });
        clients.push(client);
        return client.subscribe(WATCH, { ids: postIds });
      }),
    );
    const likers = Array.from({ length: options.likers }, (_, i) => 10_000 + i);
    for (let i = 0; i < likers.length; i += 30) {
      await Promise.all(
        likers.slice(i, i + 30).map(async (user, j) => {
          const res = await t.gql(LIKE, { id: postIds[(i + j) % postIds.length] }, { token: await t.token(user) });
          expect(res.errors).toBeUndefined();
        }),
      );
    }
    const expected = (postId: string) => likers.filter((_, i) => postIds[i % postIds.length] === postId).length;
    for (const watch of watches) {
      const pushesOf = (postId: string) => watch.received.map((r) => r.data.postCountsChanged).filter((p) => p.id === postId);
      for (const postId of postIds) {
        await waitFor(
          async () => pushesOf(postId).at(-1)?.counts.likes,
          (likes) => likes === expected(postId),
          { what: `post ${postId}'s final count on every socket`, timeoutMs: 15_000 },
        );
        const pushes = pushesOf(postId);
        const asOfs = pushes.map((p) => Date.parse(p.counts.asOf));
        expect(new Set(asOfs).size).toBe(asOfs.length); // one push per pass
        expect(asOfs).toEqual([...asOfs].sort((a, b) => a - b));
        const likes = pushes.map((p) => p.counts.likes);
        expect(likes).toEqual([...likes].sort((a, b) => a - b));
      }
    }
    const read = await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { counts { likes } } }', { ids: postIds });
    expect(read.data.posts.map((p: any) => p.counts.likes)).toEqual(postIds.map(expected));
  } finally {
    await Promise.all(clients.map((c) => c.dispose().catch(() => {})));
  }
}
