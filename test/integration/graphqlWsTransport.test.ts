// The graphql-ws transport over real sockets: a tick's pushes to one socket leave in one
// write, and a socket that does not read holds back its pushes (newest per entity) instead
// of queuing every one in memory.
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { makeExecutableSchema } from '@graphql-tools/schema';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { serveGraphqlWs } from '../../src/http/graphqlWsTransport.js';
import { LiveStream } from '../../src/live/liveStream.js';
import { waitFor, waitUntil } from '../support/wait.js';

const schema = makeExecutableSchema({
  typeDefs: 'type Query { ok: Boolean } type Subscription { values: Value! } type Value { id: Int! text: String! }',
  resolvers: {
    Subscription: {
      values: { subscribe: (_: unknown, __: unknown, ctx: { stream: LiveStream<unknown> }) => ctx.stream, resolve: (v: unknown) => v },
    },
  },
});

/** A server whose every subscription reads `stream`; counts the writes to each socket. */
async function startServer(stream: LiveStream<unknown>) {
  const wss = new WebSocketServer({ noServer: true });
  const transport = serveGraphqlWs<{ raw: Duplex }>({ schema, context: { stream } }, wss, {
    keepAliveMs: 60_000,
    logger: pino({ level: 'silent' }),
  });
  const sockets: { raw: Duplex; writes: number }[] = [];
  const server = http.createServer();
  server.on('upgrade', (request, raw: Socket, head) => {
    const counted = { raw, writes: 0 };
    sockets.push(counted);
    // What reaches the kernel: one call per write, or per batch of corked writes.
    for (const method of ['_write', '_writev'] as const) {
      const original = raw[method];
      if (original) {
        raw[method] = function (this: Socket, ...args: never[]) {
          counted.writes += 1;
          return (original as (...a: never[]) => void).apply(this, args);
        } as never;
      }
    }
    wss.handleUpgrade(request, raw, head, (ws) => transport.open(ws, raw, { raw }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/graphql`;
  return {
    url,
    sockets,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A stream for the server's subscriptions, and whether one has begun reading it. */
function readStream() {
  const stream = new LiveStream<unknown>({ stallMs: 60_000, onStall: () => {}, onEnd: () => {} });
  let reading = false;
  const next = stream.next.bind(stream);
  stream.next = () => {
    reading = true;
    return next();
  };
  return { stream, reading: async () => reading };
}

async function subscribed(url: string) {
  const socket = new WebSocket(url, 'graphql-transport-ws');
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init' }));
  await new Promise((resolve) => socket.once('message', resolve)); // connection_ack
  const received: { id: number; text: string }[] = [];
  socket.on('message', (raw) => {
    const value = JSON.parse(String(raw)).payload?.data?.values;
    if (value) received.push(value);
  });
  socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query: 'subscription { values { id text } }' } }));
  return { socket, received };
}

let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

describe('graphql-ws transport', () => {
  it("sends a tick's pushes to a socket in one write", async () => {
    const { stream, reading } = readStream();
    const server = await startServer(stream);
    cleanup = server.close;
    const { received } = await subscribed(server.url);
    await waitUntil(reading, { what: 'the subscription to read its stream' });
    const before = server.sockets[0]!.writes;
    for (let id = 0; id < 20; id++) stream.offer(id, { id, text: `v${id}` });
    await waitFor(
      async () => received.length,
      (n) => n === 20,
      { what: '20 pushes' },
    );
    expect(received.map((v) => v.id)).toEqual(Array.from({ length: 20 }, (_, id) => id));
    expect(server.sockets[0]!.writes - before).toBe(1);
  });

  it('keeps only the newest push per entity for a socket that does not read', async () => {
    const { stream, reading } = readStream();
    const server = await startServer(stream);
    cleanup = server.close;
    const { socket, received } = await subscribed(server.url);
    await waitUntil(reading, { what: 'the subscription to read its stream' });
    (socket as unknown as { _socket: Socket })._socket.pause();
    const text = 'x'.repeat(100_000);
    // 30 MB offered for one entity; the kernel buffers take a few MB, the stream the newest.
    for (let n = 0; n < 300; n++) {
      stream.offer(1, { id: n, text });
      await new Promise((r) => setImmediate(r));
    }
    const queued = server.sockets[0]!.raw.writableLength;
    expect(queued).toBeLessThan(1_000_000);
    (socket as unknown as { _socket: Socket })._socket.resume();
    await waitFor(
      async () => received.at(-1)?.id,
      (id) => id === 299,
      { what: 'the newest push', timeoutMs: 10_000 },
    );
    expect(received.length).toBeLessThan(300);
  });
});
