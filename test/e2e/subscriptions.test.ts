// Live counts over real sockets (graphql-ws client), against a whole Tally process: pushes
// carry exact absolute values at most once per flush pass, limits close or refuse with their
// documented codes, and the other sockets keep receiving.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { connectLive, type LiveClient, refusalCodes } from '../support/liveClient.js';
import { waitFor, waitUntil } from '../support/wait.js';

let t: TestApp;
const clients: LiveClient[] = [];

beforeAll(async () => {
  t = await startTestApp({ WS_MAX_SUBSCRIPTIONS: '3', WS_MAX_IDS: '5', WS_MAX_MESSAGE_BYTES: '4096', WS_MAX_CONNECTIONS_PER_CLIENT: '30' });
});
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose().catch(() => {})));
  await t.stop();
});

const live = (options: { token?: string; connectionParams?: Record<string, unknown> } = {}) => {
  const client = connectLive(t.url, options);
  clients.push(client);
  return client;
};

const WATCH_POSTS = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id title counts { likes favs asOf } } }';
const LIKE = 'mutation($id: ID!, $active: Boolean!) { setLikeRelation(input: { postId: $id, active: $active }) { changed } }';

async function like(userId: number, postId: string, active = true) {
  const res = await t.gql(LIKE, { id: postId, active }, { token: await t.token(userId) });
  expect(res.errors).toBeUndefined();
}

describe('live counts', () => {
  it('20 sockets watching one post while 300 users like it: each one ends on the exact count, one push per pass', async () => {
    const [postId] = await t.createPosts(1);
    const sockets = Array.from({ length: 20 }, (_, i) =>
      live(i % 2 === 0 ? {} : { connectionParams: {} }).subscribe(WATCH_POSTS, { ids: [postId] }),
    );
    await waitUntil(async () => t.app.websocket!.sockets() >= 20, { what: '20 sockets' });
    await new Promise((r) => setTimeout(r, 200)); // subscriptions reach the server
    const users = Array.from({ length: 300 }, (_, i) => 1000 + i);
    for (let i = 0; i < users.length; i += 30) await Promise.all(users.slice(i, i + 30).map((u) => like(u, postId!)));
    for (const socket of sockets) {
      await waitFor(
        async () => socket.received.at(-1)?.data?.postCountsChanged.counts.likes,
        (likes) => likes === 300,
        { what: 'the final count on every socket', timeoutMs: 10_000 },
      );
      const pushes = socket.received.map((r) => r.data.postCountsChanged);
      expect(pushes.every((p) => p.id === postId && p.title === 'post 0')).toBe(true);
      // One push per flush pass: each later push covers a later instant, and counts only grow here.
      const asOfs = pushes.map((p) => Date.parse(p.counts.asOf));
      expect(asOfs).toEqual([...asOfs].sort((a, b) => a - b));
      expect(new Set(asOfs).size).toBe(asOfs.length);
      const likes = pushes.map((p) => p.counts.likes);
      expect(likes).toEqual([...likes].sort((a, b) => a - b));
    }
    const query = await t.gql('query($id: ID!) { post(id: $id) { counts { likes } } }', { id: postId });
    expect(query.data.post.counts.likes).toBe(300);
  });

  it('pushes an authenticated socket the same, and a query over the socket is refused', async () => {
    const [postId] = await t.createPosts(1);
    const socket = live({ token: await t.token(7) });
    const watch = socket.subscribe(WATCH_POSTS, { ids: [postId] });
    const query = socket.subscribe('query { feed(first: 1) { edges { cursor } } }');
    expect(await refusalCodes(query)).toEqual(['BAD_USER_INPUT']);
    await new Promise((r) => setTimeout(r, 200));
    await like(8, postId!);
    await waitFor(
      async () => watch.received.at(-1)?.data?.postCountsChanged.counts.likes,
      (n) => n === 1,
      { what: 'the push' },
    );
  });

  it('refuses too many ids, none, a malformed id and a subscription past the limit, and keeps the socket', async () => {
    const socket = live();
    const tooMany = socket.subscribe(WATCH_POSTS, { ids: ['1', '2', '3', '4', '5', '6'] });
    const none = socket.subscribe(WATCH_POSTS, { ids: [] });
    const bad = socket.subscribe(WATCH_POSTS, { ids: ['x'] });
    for (const s of [tooMany, none, bad]) expect(await refusalCodes(s)).toEqual(['BAD_USER_INPUT']);
    const open = [1, 2, 3].map(() => socket.subscribe(WATCH_POSTS, { ids: ['1'] }));
    await new Promise((r) => setTimeout(r, 200));
    const fourth = socket.subscribe(WATCH_POSTS, { ids: ['1'] });
    expect(await refusalCodes(fourth)).toEqual(['BAD_USER_INPUT']);
    // The three still push.
    const [postId] = await t.createPosts(1);
    const watching = socket.subscribe(WATCH_POSTS, { ids: [postId] });
    expect(await refusalCodes(watching)).toEqual(['BAD_USER_INPUT']); // still three open
    open[0]!.stop();
    await new Promise((r) => setTimeout(r, 100));
    const replaced = socket.subscribe(WATCH_POSTS, { ids: [postId] });
    await new Promise((r) => setTimeout(r, 200));
    await like(9, postId!);
    await waitFor(
      async () => replaced.received.at(-1)?.data?.postCountsChanged.counts.likes,
      (n) => n === 1,
      { what: 'a push after a slot freed' },
    );
  });

  it('closes a socket with a bad token with 4403, and one with an oversized message with 1009', async () => {
    const badToken = live({ connectionParams: { authorization: 'Bearer nope' } });
    expect((await badToken.closed).code).toBe(4403);
    const big = live();
    big.subscribe(WATCH_POSTS, { ids: ['1'], padding: 'x'.repeat(8000) });
    expect((await big.closed).code).toBe(1009);
  });
});
