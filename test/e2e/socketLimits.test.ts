// How many WebSocket connections a client may hold, as deployed: counted across API replicas
// (a per-process count let a user hold the limit on each), places of a process that stopped
// renewing them given back within a lease, and sockets that never sent connection_init
// counted against their address, so one address cannot take every connection.
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createSocketLeases } from '../../src/live/socketLeases.js';
import { createKeys } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { connectLive, type LiveClient, wsUrl } from '../support/liveClient.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';

const LIMIT = 3;
let a: TestApp;
let b: TestApp;
const clients: LiveClient[] = [];
const raw: WebSocket[] = [];

beforeAll(async () => {
  const env = { WS_MAX_CONNECTIONS_PER_CLIENT: String(LIMIT), WS_INIT_TIMEOUT_MS: '30000', TRUST_PROXY_HOPS: '1' };
  a = await startTestApp(env);
  b = await startTestApp(env, { sharing: a });
});
afterAll(async () => {
  for (const socket of raw) socket.terminate();
  await Promise.all(clients.map((c) => c.dispose().catch(() => {})));
  await b.stop();
  await a.stop();
});

/** A graphql-ws client; resolves once acknowledged, or with the close code it got instead. */
async function open(app: TestApp, token?: string): Promise<{ client: LiveClient; code: number | null }> {
  const client = connectLive(app.url, { token });
  clients.push(client);
  const code = await Promise.race([
    new Promise<null>((resolve) => client.client.on('connected', () => resolve(null))),
    client.closed.then((event) => event.code),
  ]);
  return { client, code };
}

/** A raw socket from `address` (X-Forwarded-For) that sends no connection_init, and the upgrade's status. */
function uninitialised(app: TestApp, address: string): Promise<{ socket: WebSocket; status: number }> {
  const socket = new WebSocket(wsUrl(app.url), 'graphql-transport-ws', { headers: { 'x-forwarded-for': address } });
  raw.push(socket);
  return new Promise((resolve) => {
    socket.once('open', () => resolve({ socket, status: 101 }));
    socket.once('unexpected-response', (_req, res) => resolve({ socket, status: res.statusCode ?? 0 }));
    socket.once('error', () => {});
  });
}
const status = async (app: TestApp, address: string) => (await uninitialised(app, address)).status;

describe('connections per client', () => {
  it('are counted across replicas: a user holds at most the limit in the whole deployment', async () => {
    const token = await a.token(801);
    const held = [await open(a, token), await open(a, token), await open(b, token)];
    expect(held.map((h) => h.code)).toEqual([null, null, null]);
    // One more, on either replica: refused.
    expect((await open(b, token)).code).toBe(1008);
    expect((await open(a, token)).code).toBe(1008);
    // Another user is not affected.
    expect((await open(b, await a.token(802))).code).toBeNull();
    // A socket closed on A frees a place on B.
    await held[0]!.client.dispose();
    await waitFor(
      () => a.app.redis.zcard(a.app.keys.clientSockets('u:801')),
      (n) => n === 2,
      { what: 'A to give the place back' },
    );
    expect((await open(b, token)).code).toBeNull();
  });

  it('of a process that stopped renewing them are given back within a lease', async () => {
    const prefix = uniquePrefix('leases');
    const redis = withScripts(new Redis(TEST_REDIS_URL));
    const keys = createKeys(prefix, 16);
    const logger = pino({ level: 'silent' });
    // A process that "dies": it holds the client's places and never renews or releases them.
    const dead = createSocketLeases({ redis, keys, processId: 'dead', logger, leaseMs: 500 });
    const alive = createSocketLeases({ redis, keys, processId: 'alive', logger, leaseMs: 500 });
    try {
      expect(await dead.take('u:9', 2)).not.toBeNull();
      expect(await dead.take('u:9', 2)).not.toBeNull();
      dead.close();
      expect(await alive.take('u:9', 2)).toBeNull();
      await new Promise((r) => setTimeout(r, 700)); // a lease runs out: time is what is tested
      const release = await alive.take('u:9', 2);
      expect(release).not.toBeNull();
      // Renewed while held: past several leases it still counts.
      await new Promise((r) => setTimeout(r, 1200)); // over two leases: time is what is tested
      expect(await alive.take('u:9', 2)).not.toBeNull();
      expect(await alive.take('u:9', 2)).toBeNull();
      release!(); // its ZREM goes to Redis on the same connection, before the next take
      expect(await alive.take('u:9', 2)).not.toBeNull();
    } finally {
      alive.close();
      await deleteKeys(prefix);
      redis.disconnect();
    }
  });

  it('count sockets without connection_init against their address, so other addresses still get in', async () => {
    const held = [];
    for (let i = 0; i < LIMIT; i++) held.push(await uninitialised(a, '203.0.113.7'));
    expect(held.map((h) => h.status)).toEqual([101, 101, 101]);
    expect(await status(a, '203.0.113.7')).toBe(429);
    expect(await status(a, '203.0.113.8')).toBe(101);
    // Once one of them sends connection_init, it counts as a connection of its client instead.
    const first = held[0]!.socket;
    first.send(JSON.stringify({ type: 'connection_init', payload: {} }));
    await new Promise((resolve) => first.once('message', resolve)); // connection_ack
    expect(await status(a, '203.0.113.7')).toBe(101);
  });
});
