// Connections cannot be held open for free: idle, slow and surplus connections are cut by
// the server's own limits (short here so the test is quick), and a client that goes away is
// not counted as the service's error.
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
let port: number;
beforeAll(async () => {
  t = await startTestApp({
    NODE_ENV: 'production',
    HTTP_HEADERS_TIMEOUT_MS: '600',
    HTTP_REQUEST_TIMEOUT_MS: '1500',
    HTTP_KEEP_ALIVE_TIMEOUT_MS: '500',
    HTTP_IDLE_TIMEOUT_MS: '20000',
    HTTP_MAX_CONNECTIONS: '8',
  });
  port = Number(new URL(t.url).port);
});
afterAll(() => t.stop());

interface Connection {
  socket: Socket;
  /** Everything the server sent. */
  received: () => string;
  /** Resolves with the ms from connecting until the server closed the connection. */
  closed: Promise<number>;
}

function open(): Promise<Connection> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let text = '';
    const socket = connect(port, '127.0.0.1');
    const closed = new Promise<number>((done) => socket.once('close', () => done(Date.now() - started)));
    socket.on('data', (chunk) => (text += chunk.toString()));
    socket.on('error', () => {}); // a reset is one way of being cut
    socket.once('connect', () => resolve({ socket, received: () => text, closed }));
    socket.once('error', reject);
  });
}

const request = (body: string, headers = '') =>
  `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;

/** Sends a request's headers asking to continue, and waits for the server's 100 Continue: it has the request. */
async function started(connection: Connection, body: string) {
  connection.socket.write(request(body, 'Expect: 100-continue\r\n').slice(0, -body.length));
  await waitFor(
    async () => connection.received(),
    (text) => text.includes('100 Continue'),
    { what: "the server's 100 Continue" },
  );
}

async function requestsByOutcome(outcome: string): Promise<number> {
  const text = await (await fetch(`${t.url}/metrics`)).text();
  return [...text.matchAll(new RegExp(`tally_graphql_requests_total\\{[^}]*outcome="${outcome}"[^}]*\\} (\\d+)`, 'g'))].reduce(
    (n, m) => n + Number(m[1]),
    0,
  );
}

describe('connection limits', () => {
  it('closes a connection that never sends its headers after HTTP_HEADERS_TIMEOUT_MS', async () => {
    const idle = await open();
    const ms = await idle.closed;
    expect(ms).toBeGreaterThanOrEqual(500);
    expect(ms).toBeLessThan(5000);
  });

  it('cuts a body trickled byte by byte after HTTP_REQUEST_TIMEOUT_MS with 408', async () => {
    const slow = await open();
    slow.socket.write(request('{"query":"{ viewer { id } }"}').slice(0, -20));
    const drip = setInterval(() => slow.socket.writable && slow.socket.write(' '), 100);
    const ms = await slow.closed;
    clearInterval(drip);
    expect(ms).toBeGreaterThanOrEqual(1400);
    expect(ms).toBeLessThan(6000);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
  });

  it('closes a kept-alive connection that waits longer than HTTP_KEEP_ALIVE_TIMEOUT_MS for its next request', async () => {
    const keptAlive = await open();
    keptAlive.socket.write(request('{"query":"{ viewer { id } }"}'));
    await waitFor(
      async () => keptAlive.received(),
      (text) => text.includes('"viewer":null'),
      { what: 'the first answer' },
    );
    const answeredAt = Date.now();
    await keptAlive.closed;
    expect(Date.now() - answeredAt).toBeLessThan(5000);
  });

  it('refuses connections past HTTP_MAX_CONNECTIONS, and takes new ones once some close', async () => {
    const held = await Promise.all(Array.from({ length: 8 }, () => open()));
    // The server accepts connections in order: once it answers the last, it counts all 8, and the 9th is closed at once.
    await started(held.at(-1)!, '{}');
    const surplus = await open();
    expect(await surplus.closed).toBeLessThan(500);
    for (const c of held) c.socket.destroy();
    await waitFor(
      () =>
        fetch(`${t.url}/healthz`).then(
          (r) => r.status,
          () => 0,
        ),
      (status) => status === 200,
      { what: 'a new connection to be accepted' },
    );
  });

  it('counts a client that leaves mid-request as aborted, not as an internal error', async () => {
    const before = await requestsByOutcome('aborted');
    const leaving = await open();
    const body = `{"query":"{ viewer { id } }","pad":"${'x'.repeat(100)}"}`;
    await started(leaving, body);
    leaving.socket.write(body.slice(0, -50));
    leaving.socket.destroy();
    await waitFor(
      () => requestsByOutcome('aborted'),
      (n) => n === before + 1,
      { what: 'the aborted request to be counted' },
    );
    expect(await requestsByOutcome('INTERNAL_SERVER_ERROR')).toBe(0);
  });
});
