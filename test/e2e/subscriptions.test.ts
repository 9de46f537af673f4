// Live counts over real sockets (graphql-ws client), against a whole Tally process: pushes
// carry exact absolute values at most once per flush pass, limits close or refuse with their
// documented codes, and the other sockets keep receiving.
import diagnostics from 'node:diagnostics_channel';
import { connect, type Socket } from 'node:net';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { connectLive, type LiveClient, onServer, refusalCodes, wsUrl } from '../support/liveClient.js';
import { runLiveStorm } from '../support/liveStorm.js';
import { waitFor, waitUntil } from '../support/wait.js';

let t: TestApp;
const clients: LiveClient[] = [];

beforeAll(async () => {
  t = await startTestApp({
    WS_MAX_SUBSCRIPTIONS: '3',
    WS_MAX_IDS: '5',
    WS_MAX_MESSAGE_BYTES: '4096',
    WS_MAX_CONNECTIONS_PER_CLIENT: '30',
    WS_INIT_TIMEOUT_MS: '500',
    WS_STALL_MS: '500',
    WS_MAX_BUFFERED_BYTES: '65536',
  });
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
  it(
    '20 sockets watching one post while 300 users like it: each one ends on the exact count, one push per pass',
    () => runLiveStorm(t, { sockets: 20, posts: 1, likers: 300 }),
    60_000,
  );

  it('pushes an authenticated socket the same, and a query over the socket is refused', async () => {
    const [postId] = await t.createPosts(1);
    const socket = live({ token: await t.token(7) });
    const watch = await onServer(t.url, 1, () => socket.subscribe(WATCH_POSTS, { ids: [postId] }));
    const query = socket.subscribe('query { feed(first: 1) { edges { cursor } } }');
    expect(await refusalCodes(query)).toEqual(['BAD_USER_INPUT']);
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
    // The document limits of HTTP apply too: here MAX_ALIASES (100).
    const aliases = Array.from({ length: 101 }, (_, i) => `a${i}: id`).join(' ');
    const overLimit = socket.subscribe(`subscription { postCountsChanged(postIds: ["1"]) { ${aliases} } }`);
    expect(await refusalCodes(overLimit)).toEqual(['BAD_USER_INPUT']);
    for (const s of [tooMany, none, bad]) expect(await refusalCodes(s)).toEqual(['BAD_USER_INPUT']);
    // Variables that do not coerce are the client's input too, and production suggests nothing.
    const refusal = async (query: string, variables: Record<string, unknown>) => {
      const errors = await socket.subscribe(query, variables).done.then(
        () => [],
        (e: { message: string; extensions?: { code?: string } }[]) => e,
      );
      return errors.map((e) => [e.extensions?.code, e.message]);
    };
    expect(await refusal(WATCH_POSTS, { ids: [{ a: 1 }] })).toEqual([['BAD_USER_INPUT', expect.stringMatching(/\$ids/)]]);
    expect(await refusal(WATCH_POSTS, {})).toEqual([['BAD_USER_INPUT', expect.stringMatching(/\$ids.*not provided/)]]);
    const misspelt = await refusal(WATCH_POSTS.replace('[ID!]!', '[IDD!]!'), { ids: ['1'] });
    expect(misspelt.map(([code]) => code)).toContain('BAD_USER_INPUT');
    expect(JSON.stringify(misspelt)).not.toMatch(/did you mean/i);
    // WS_MAX_SUBSCRIPTIONS (3) are allowed, and each pushes.
    const [postId] = await t.createPosts(1);
    const open = await onServer(t.url, 3, () => [1, 2, 3].map(() => socket.subscribe(WATCH_POSTS, { ids: [postId] })));
    const fourth = socket.subscribe(WATCH_POSTS, { ids: [postId] });
    expect(await refusalCodes(fourth)).toEqual(['BAD_USER_INPUT']);
    await like(9, postId!);
    for (const s of open) {
      await waitFor(
        async () => s.received.at(-1)?.data?.postCountsChanged.counts.likes,
        (n) => n === 1,
        { what: 'a push to each of the three' },
      );
    }
    await onServer(t.url, -1, () => open[0]!.stop());
    const replaced = await onServer(t.url, 1, () => socket.subscribe(WATCH_POSTS, { ids: [postId] }));
    await like(10, postId!);
    await waitFor(
      async () => replaced.received.at(-1)?.data?.postCountsChanged.counts.likes,
      (n) => n === 2,
      { what: 'a push after a slot freed' },
    );
  });

  it('closes a socket with a bad token with 4403, and one with an oversized message with 1009', async () => {
    const badToken = live({ connectionParams: { authorization: 'Bearer nope' } });
    expect((await badToken.closed).code).toBe(4403);
    // The key in any letter case, as clients copy it from their HTTP header.
    const capitalized = live({ connectionParams: { Authorization: 'Bearer nope' } });
    expect((await capitalized.closed).code).toBe(4403);
    const big = live();
    big.subscribe(WATCH_POSTS, { ids: ['1'], padding: 'x'.repeat(8000) });
    expect((await big.closed).code).toBe(1009);
  });

  it('reports sockets, subscriptions, pushes and the fan-out lag in /metrics', async () => {
    const [postId] = await t.createPosts(1);
    const socket = live();
    const watch = await onServer(t.url, 1, () => socket.subscribe(WATCH_POSTS, { ids: [postId] }));
    await like(71, postId!);
    await waitFor(
      async () => watch.received.length,
      (n) => n > 0,
      { what: 'a push' },
    );
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1]);
    expect(value('tally_live_sockets')).toBeGreaterThanOrEqual(1);
    expect(value('tally_live_subscriptions')).toBeGreaterThanOrEqual(1);
    expect(value('tally_live_pushes_total')).toBeGreaterThanOrEqual(1);
    expect(value('tally_live_fan_out_lag_seconds_count')).toBeGreaterThanOrEqual(1);
    expect(value('tally_live_fan_out_lag_seconds_sum') / value('tally_live_fan_out_lag_seconds_count')).toBeLessThan(1);
  });

  it('survives upgrades to another path that reset at once, and keeps serving', async () => {
    const { port } = new URL(t.url);
    // The server's side of each connection (this process accepts them): once all have closed,
    // the server has handled every reset.
    const serverSides: Promise<unknown>[] = [];
    const accepted = ({ socket }: { socket: Socket }) => serverSides.push(new Promise((resolve) => socket.once('close', resolve)));
    diagnostics.subscribe('net.server.socket', accepted as (message: unknown) => void);
    try {
      for (let i = 0; i < 50; i++) {
        const socket = connect(Number(port), '127.0.0.1');
        socket.on('error', () => {});
        await new Promise((resolve) => socket.once('connect', resolve));
        socket.write(
          'GET /nope HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n',
        );
        socket.resetAndDestroy();
      }
      await waitUntil(async () => serverSides.length >= 50, { what: 'the server accepting all 50' });
      await Promise.all(serverSides);
    } finally {
      diagnostics.unsubscribe('net.server.socket', accepted as (message: unknown) => void);
    }
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
  });

  it('closes a socket that sends no connection_init in time with 4408', async () => {
    const socket = new WebSocket(wsUrl(t.url), 'graphql-transport-ws');
    const code = await new Promise<number>((resolve) => socket.on('close', (c) => resolve(c)));
    expect(code).toBe(4408);
  });

  it('closes a socket when its token expires, with 4403', async () => {
    // Expired 28 s ago: still inside the 30 s clock tolerance for about 2 s more.
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('31')
      .setExpirationTime(Math.floor(Date.now() / 1000) - 28)
      .sign(new TextEncoder().encode(TEST_JWT_SECRET));
    const socket = live({ token });
    socket.subscribe(WATCH_POSTS, { ids: ['1'] });
    const started = Date.now();
    expect((await socket.closed).code).toBe(4403);
    expect(Date.now() - started).toBeGreaterThan(500);
  });

  it('closes one user’s connections past WS_MAX_CONNECTIONS_PER_CLIENT with 1008, and the others stay', async () => {
    const token = await t.token(41);
    const first = Array.from({ length: 30 }, () => live({ token }));
    await Promise.all(first.map((c) => new Promise((resolve) => c.client.on('connected', resolve))));
    const extra = live({ token });
    expect((await extra.closed).code).toBe(1008);
    const [postId] = await t.createPosts(1);
    const watch = await onServer(t.url, 1, () => first[0]!.subscribe(WATCH_POSTS, { ids: [postId] }));
    await like(42, postId!);
    await waitFor(
      async () => watch.received.at(-1)?.data?.postCountsChanged.counts.likes,
      (n) => n === 1,
      { what: 'a push' },
    );
    await Promise.all(first.map((c) => c.dispose()));
  });

  it('pushes a watched user when their counters change', async () => {
    const socket = live();
    await t.gql('query { viewer { id } }', {}, { token: await t.token(51) }); // user 51 exists
    const watch = await onServer(t.url, 1, () =>
      socket.subscribe('subscription($ids: [ID!]!) { userCountsChanged(userIds: $ids) { id counts { followers asOf } } }', {
        ids: ['51'],
      }),
    );
    const res = await t.gql(
      'mutation { setFollowRelation(input: { userId: "51", active: true }) { changed } }',
      {},
      { token: await t.token(52) },
    );
    expect(res.data.setFollowRelation.changed).toBe(true);
    const pushed = await waitFor(
      async () => watch.received.at(-1)?.data?.userCountsChanged,
      (u) => u?.counts.followers === 1,
      {
        what: 'the followee pushed',
        timeoutMs: 10_000,
      },
    );
    expect(pushed.id).toBe('51');
  });

  it("pushes each viewer's own state beside the counts every socket shares", async () => {
    // Ten posts, half liked by the viewer: an anonymous socket's pushes share one execution
    // per post; the viewer's, which selects myState, get their own.
    const posts = await t.createPosts(10);
    const liker = 81;
    const anonymous = live();
    const own = live({ token: await t.token(liker) });
    const watch = (socket: LiveClient, state: boolean) =>
      [posts.slice(0, 5), posts.slice(5)].map((ids) =>
        socket.subscribe(
          `subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes } ${state ? 'myState { liked }' : ''} } }`,
          {
            ids,
          },
        ),
      );
    const watching = await onServer(t.url, 4, () => [...watch(anonymous, false), ...watch(own, true)]);
    await Promise.all(posts.map((id, i) => like(i % 2 === 0 ? liker : 90 + i, id)));
    const pushed = () => watching.flatMap((w) => w.received.map((r) => r.data?.postCountsChanged));
    await waitFor(
      async () => pushed().filter((p) => p?.counts.likes === 1).length,
      (n) => n === 20,
      { what: 'a push of every post on both sockets' },
    );
    for (const [i, id] of posts.entries()) {
      const mine = pushed().find((p) => p.id === id && p.myState);
      expect(mine).toEqual({ id, counts: { likes: 1 }, myState: { liked: i % 2 === 0 } });
      expect(pushed().find((p) => p.id === id && !p.myState)).toEqual({ id, counts: { likes: 1 } });
    }
  });

  it('closes a socket that stops reading with 1013; the others keep receiving', async () => {
    const postId = await bigPost(t);
    const slow = await onServer(t.url, 1, () => slowReader(t, postId));
    const healthy = await onServer(t.url, 1, () => live().subscribe(WATCH_POSTS, { ids: [postId] }));
    slow.pause();

    let likes = 0;
    const stalled = async () => {
      const metrics = await (await fetch(`${t.url}/metrics`)).text();
      return /tally_live_sockets_closed_total\{code="1013"\} [1-9]/.test(metrics) || t.app.websocket!.sockets() < 2;
    };
    for (let u = 2000; u < 2060 && !(await stalled()); u++) {
      await like(u, postId);
      likes += 1;
      // WS_STALL_MS is a time limit: pushes keep coming for as long as it takes to pass it.
      await new Promise((r) => setTimeout(r, 150));
    }
    slow.resume();
    expect(await slow.closed).toBe(1013);
    await waitFor(
      async () => healthy.received.at(-1)?.data?.postCountsChanged.counts.likes,
      (n) => n === likes,
      {
        what: 'the healthy socket on the final count',
        timeoutMs: 10_000,
      },
    );
  });
});

/** A post of 10,000 characters: a subscription selecting its body 100 times gets ~1 MB pushes. */
async function bigPost(app: TestApp): Promise<string> {
  const created = await app.gql(
    'mutation($b: String!) { createPost(input: { title: "big", body: $b }) { id } }',
    { b: 'x'.repeat(10_000) },
    { token: await app.token(61) },
  );
  return created.data.createPost.id as string;
}

/**
 * A raw socket watching `postId` with ~1 MB pushes, that can stop reading: a socket that does
 * not read fills its kernel buffers within a few pushes, and the rest wait in the server.
 */
async function slowReader(app: TestApp, postId: string) {
  const bodies = Array.from({ length: 100 }, (_, i) => `b${i}: body`).join(' ');
  const socket = new WebSocket(wsUrl(app.url), 'graphql-transport-ws');
  const closed = new Promise<number>((resolve) => socket.on('close', (code) => resolve(code)));
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: {} }));
  await new Promise((resolve) => socket.once('message', resolve)); // connection_ack
  socket.send(
    JSON.stringify({
      id: '1',
      type: 'subscribe',
      payload: { query: `subscription { postCountsChanged(postIds: ["${postId}"]) { id ${bodies} } }` },
    }),
  );
  const raw = (socket as unknown as { _socket: { pause(): void; resume(): void } })._socket;
  return { closed, pause: () => raw.pause(), resume: () => raw.resume() };
}

describe('a slow reader the pings find first', () => {
  it('closes it with 1013 too, not as a dead peer', async () => {
    // Pings every 2 s; the stall and buffer limits out of reach, so only the ping can close it.
    const app = await startTestApp({ WS_PING_INTERVAL_MS: '2000', WS_STALL_MS: '3600000', WS_MAX_BUFFERED_BYTES: String(1024 ** 3) });
    try {
      const postId = await bigPost(app);
      const slow = await onServer(app.url, 1, () => slowReader(app, postId));
      slow.pause();
      // ~6 s of pushes: a ping after the pause goes unanswered, and pushes wait behind it.
      for (let u = 3000; u < 3060; u++) {
        const res = await app.gql(LIKE, { id: postId, active: true }, { token: await app.token(u) });
        expect(res.errors).toBeUndefined();
        await new Promise((r) => setTimeout(r, 100)); // pushes spread over pings: time is what is tested
      }
      slow.resume();
      expect(await slow.closed).toBe(1013);
    } finally {
      await app.stop();
    }
  }, 30_000);
});

describe('shutdown', () => {
  it('completes subscriptions and closes sockets with 1001 when the server stops', async () => {
    const other = await startTestApp();
    const [postId] = await other.createPosts(1);
    const client = connectLive(other.url);
    const watch = await onServer(other.url, 1, () => client.subscribe(WATCH_POSTS, { ids: [postId] }));
    await other.stop();
    await watch.done; // the server completed it
    expect((await client.closed).code).toBe(1001);
  });
});
