// Child-process entry of the live scenario's clients (docs/performance.md, "Live counts"): raw graphql-transport-ws
// sockets on `ws` (recording ones parse every push, the others count them unparsed), or HTTP pollers of the same counts.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import { serveParent } from './child.js';
import { postGraphQL } from './httpPost.js';

const [OPEN_CONCURRENCY, OPEN_TIMEOUT_MS, POLL_TIMEOUT_MS] = [200, 60_000, 30_000];

export type ClientSpec = { index: number; postIds: string[] };
type Counts = { postCountsChanged: { id: string; counts: { likes: number } } };

/** Recording sockets keep their pushes flattened as [postId, likes, at (epoch ms)]…. */
const sockets: { index: number; ws: WebSocket; pushes: number; record: (ClientSpec & { pushes: number[] }) | null }[] = [];
let [pushes, errors, pollFailures, closing] = [0, 0, 0, false];
const closes: Record<string, number> = {}; // close codes of sockets closed before closeAll
const unexpected: string[] = [];
const note = (text: string) => unexpected.length < 10 && unexpected.push(text.slice(0, 300));

function openSocket(url: string, query: string, spec: ClientSpec, record: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: !record });
    const socket = { index: spec.index, ws, pushes: 0, record: record ? { ...spec, pushes: [] as number[] } : null };
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
        sockets.push(socket);
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables: { ids: spec.postIds } } }));
        return resolve();
      }
      if (is('ping')) return ws.send('{"type":"pong"}');
      if (!is('next') || data.includes('"errors"')) {
        errors += 1;
        return note(`socket ${spec.index}: ${data}`);
      }
      pushes += 1;
      socket.pushes += 1;
      if (!socket.record) return;
      const post = (JSON.parse(data.toString('utf8')) as { payload: { data: Counts } }).payload.data.postCountsChanged;
      socket.record.pushes.push(Number(post.id), post.counts.likes, Date.now());
    });
  });
}

async function open(a: { url: string; query: string; sockets: ClientSpec[]; record: boolean }) {
  let next = 0;
  const opener = async () => {
    while (next < a.sockets.length) await openSocket(a.url, a.query, a.sockets[next++]!, a.record);
  };
  await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, a.sockets.length) }, opener));
}

const terminateAll = () => {
  for (const s of sockets) s.ws.terminate();
};

async function closeAll() {
  closing = true;
  const cut = setTimeout(() => terminateAll(), 10_000);
  await Promise.all(
    sockets.map(({ ws }) => ws.readyState === WebSocket.CLOSED || new Promise((r) => ws.once('close', r).close(1000, 'bench done'))),
  );
  clearTimeout(cut);
  closing = false;
  return sockets.splice(0).length;
}

/** Pollers, each on a keep-alive connection of its own; every poll kept as [sentAt, at, likes of each watched post]… (epoch ms). */
function startPolling({ url, query, pollers, intervalMs }: { url: string; query: string; pollers: ClientSpec[]; intervalMs: number }) {
  let stopped = false;
  const records = pollers.map((spec) => ({ ...spec, polls: [] as number[] }));
  const loops = records.map(async (record) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const body = JSON.stringify({ query, variables: { ids: record.postIds } });
    await sleep(Math.random() * intervalMs);
    while (!stopped) {
      const sentAt = Date.now();
      try {
        type Posts = { posts: ({ counts: { likes: number } } | null)[] };
        const { data } = await postGraphQL<Posts>(url, body, { agent, timeoutMs: POLL_TIMEOUT_MS });
        record.polls.push(sentAt, Date.now(), ...data.posts.map((p) => p?.counts.likes ?? Number.NaN));
      } catch (error) {
        pollFailures += 1;
        note(`poller ${record.index}: ${(error as Error).message}`);
      }
      const wait = sentAt + intervalMs - Date.now();
      if (wait > 0 && !stopped) await sleep(wait);
    }
    agent.destroy();
  });
  return async () => {
    stopped = true;
    await Promise.all(loops);
    return { failures: pollFailures, unexpected, records };
  };
}

let stopPolling: ReturnType<typeof startPolling> | null = null;

const commands = {
  open,
  mark: () => {
    const { idle, active } = performance.eventLoopUtilization();
    return { pushes, loop: { idle, active } };
  },
  sockets: () => ({
    sockets: sockets.length,
    open: sockets.filter((s) => s.ws.readyState === WebSocket.OPEN).length,
    silent: sockets.filter((s) => s.pushes === 0).map((s) => s.index),
    ...{ errors, closes, unexpected },
    records: sockets.flatMap((s) => (s.record ? [s.record] : [])),
  }),
  closeAll,
  startPolling: (a: Parameters<typeof startPolling>[0]) => {
    if (stopPolling) throw new Error('already polling');
    stopPolling = startPolling(a);
  },
  stopPolling: () => {
    if (!stopPolling) throw new Error('not polling');
    const stop = stopPolling;
    stopPolling = null;
    return stop();
  },
};
export type LiveCommands = typeof commands;
serveParent(commands, {}, async () => terminateAll());
