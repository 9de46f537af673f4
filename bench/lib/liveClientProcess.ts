// Child-process entry of the live scenario's clients: raw graphql-transport-ws sockets on `ws`, or HTTP pollers of the same
// counts. Both count their updates and, when recording, keep what they saw flattened as [postId, likes, at (epoch ms)]….
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { postGraphQL } from './load.js';
import { serveParent } from './servers.js';

const [OPEN_CONCURRENCY, OPEN_TIMEOUT_MS, POLL_TIMEOUT_MS] = [200, 60_000, 30_000];

export type ClientSpec = { index: number; postIds: string[] };
type OpenArgs = { kind: 'socket' | 'poller'; url: string; query: string; clients: ClientSpec[]; record: boolean; intervalMs?: number };
/** `updates`: pushes, or posts whose likes differ from the poller's previous answer. */
type Client = ClientSpec & { updates: number; seen: number[] | null; isOpen(): boolean; close(): Promise<unknown>; terminate(): void };

const clients: Client[] = [];
let [answers, errors, failures, closing] = [0, 0, 0, false];
const closes: Record<string, number> = {}; // close codes of sockets closed before closeAll
const unexpected: string[] = [];
const note = (text: string) => unexpected.length < 10 && unexpected.push(text.slice(0, 300));

function openSocket(url: string, query: string, spec: ClientSpec, record: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: !record });
    const close = async () => ws.readyState === WebSocket.CLOSED || new Promise((r) => ws.once('close', r).close(1000, 'bench done'));
    const isOpen = () => ws.readyState === WebSocket.OPEN;
    const client: Client = { ...spec, updates: 0, seen: record ? [] : null, isOpen, close, terminate: () => ws.terminate() };
    let acked = false;
    const fail = (why: string) => {
      clearTimeout(timer);
      ws.terminate();
      reject(new Error(`socket ${spec.index}: ${why}`));
    };
    const timer = setTimeout(() => fail(`no connection_ack within ${OPEN_TIMEOUT_MS} ms`), OPEN_TIMEOUT_MS);
    ws.on('open', () => ws.send('{"type":"connection_init","payload":{}}'));
    ws.on('error', (error) => (acked ? note(`socket ${spec.index}: ${error.message}`) : fail(error.message)));
    ws.on('close', (code, reason) => {
      if (!acked) return fail(`closed before connection_ack: ${code} ${reason}`);
      if (closing) return;
      closes[code] = (closes[code] ?? 0) + 1;
      note(`socket ${spec.index} closed by the server: ${code} ${reason}`);
    });
    ws.on('message', (data: Buffer) => {
      const is = (type: string) => data.includes(`"type":"${type}"`);
      if (!acked) {
        if (!is('connection_ack')) return fail(`expected connection_ack, got ${data}`);
        acked = true;
        clearTimeout(timer);
        clients.push(client);
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables: { ids: spec.postIds } } }));
        return resolve();
      }
      if (is('ping')) return ws.send('{"type":"pong"}');
      if (!is('next') || data.includes('"errors"')) {
        errors += 1;
        return note(`socket ${spec.index}: ${data}`);
      }
      client.updates += 1;
      if (!client.seen) return; // the others count their pushes unparsed
      const { id, counts } = JSON.parse(data.toString('utf8')).payload.data.postCountsChanged;
      client.seen.push(Number(id), counts.likes, Date.now());
    });
  });
}

function startPoller(url: string, query: string, spec: ClientSpec, record: boolean, intervalMs: number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ query, variables: { ids: spec.postIds } });
  const ask = () => postGraphQL<{ posts: ({ counts: { likes: number } } | null)[] }>(url, body, { agent, timeoutMs: POLL_TIMEOUT_MS });
  let stopped = false;
  const close = async () => {
    stopped = true;
    await loop;
  };
  const client: Client = { ...spec, updates: 0, seen: record ? [] : null, isOpen: () => !stopped, close, terminate: close };
  clients.push(client);
  const loop = (async () => {
    await sleep(Math.random() * intervalMs);
    let previous: number[] | null = null;
    while (!stopped) {
      const sentAt = Date.now();
      try {
        const { data } = await ask();
        const [at, likes] = [Date.now(), data.posts.map((p) => p?.counts.likes ?? Number.NaN)];
        answers += 1;
        for (const [j, count] of likes.entries()) {
          if (previous && count !== previous[j]) client.updates += 1;
          client.seen?.push(Number(spec.postIds[j]), count, at);
        }
        previous = likes;
      } catch (error) {
        failures += 1;
        note(`poller ${spec.index}: ${(error as Error).message}`);
      }
      const wait = sentAt + intervalMs - Date.now();
      if (wait > 0 && !stopped) await sleep(wait);
    }
    agent.destroy();
  })();
}

async function open({ kind, url, query, clients: specs, record, intervalMs = 0 }: OpenArgs) {
  if (kind === 'poller') for (const spec of specs) startPoller(url, query, spec, record, intervalMs);
  let next = 0;
  const opener = async () => {
    while (next < specs.length) await openSocket(url, query, specs[next++]!, record);
  };
  if (kind === 'socket') await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, specs.length) }, opener));
}

const terminateAll = () => {
  for (const client of clients) client.terminate();
};

const commands = {
  open,
  mark: () => ({ updates: clients.reduce((n, c) => n + c.updates, 0), answers, loop: performance.eventLoopUtilization() }),
  report: () => ({
    clients: clients.length,
    open: clients.filter((c) => c.isOpen()).length,
    silent: clients.filter((c) => c.updates === 0).map((c) => c.index),
    ...{ errors, failures, closes, unexpected },
    records: clients.flatMap(({ index, postIds, seen }) => (seen ? [{ index, postIds, seen }] : [])),
  }),
  async closeAll() {
    closing = true;
    const cut = setTimeout(terminateAll, 10_000);
    await Promise.all(clients.map((c) => c.close()));
    clearTimeout(cut);
    closing = false;
    return clients.splice(0).length;
  },
};
export type LiveCommands = typeof commands;
serveParent(commands, {}, async () => terminateAll());
