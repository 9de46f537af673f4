// Child-process entry of the live scenario's load generator: thousands of WebSocket clients
// of Tally's live counts, or HTTP pollers of the same counts, in one process so the bench's
// own process (which sends the likes and times their acknowledgements) stays responsive.
// Started and driven by bench/lib/liveClients.ts (bench/lib/child.ts).
//
// A socket is a raw graphql-transport-ws client on `ws` (connection_init → connection_ack →
// one subscribe of the given document, a postCountsChanged selection), not a graphql-ws
// Client object: lighter, and every byte it handles is visible here. Recording sockets parse
// every push and keep (post, likes, arrival time); the others only count their pushes,
// recognising a `next` message without parsing it. Pollers send the given `posts(ids)`
// query over their own keep-alive connection once per interval.
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { serveParent } from './child.js';
import { httpPost } from './httpPost.js';

/** Sockets connecting at once (connect, init, ack, subscribe), per process. */
const OPEN_CONCURRENCY = 200;
const OPEN_TIMEOUT_MS = 60_000;
const POLL_TIMEOUT_MS = 30_000;

export interface SocketSpec {
  index: number;
  postIds: string[];
}

export interface Mark {
  /** Pushes (`next` messages with data) received by every socket so far. */
  pushes: number;
  /** Polls answered so far. */
  polls: number;
  /** Event loop time so far (performance.eventLoopUtilization()), ms. */
  loop: { idle: number; active: number };
}

export interface SocketReport {
  sockets: number;
  open: number;
  /** Indexes of the sockets that never received a push. */
  silent: number[];
  pushes: number;
  errors: number;
  /** Close codes of sockets that closed before closeAll, and how many. */
  closes: Record<string, number>;
  /** The first unexpected messages (errors, refusals), for the log. */
  unexpected: string[];
  /** Recording sockets: their posts and pushes, flattened as [postId, likes, at (epoch ms)]... */
  records: { index: number; postIds: string[]; pushes: number[] }[];
}

export interface PollReport {
  requests: number;
  failures: number;
  unexpected: string[];
  /** Every poll of every poller, flattened as [sentAt, at, likes of postIds[0], …, likes of postIds[n-1]]... (epoch ms). */
  records: { index: number; postIds: string[]; polls: number[] }[];
}

interface LiveSocket {
  index: number;
  ws: WebSocket;
  pushes: number;
  record: { index: number; postIds: string[]; pushes: number[] } | null;
}

const sockets: LiveSocket[] = [];
let pushes = 0;
let errors = 0;
let closing = false;
const closes: Record<string, number> = {};
const unexpected: string[] = [];
const note = (text: string) => {
  if (unexpected.length < 10) unexpected.push(text.slice(0, 300));
};

function openSocket(url: string, query: string, spec: SocketSpec, record: boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, 'graphql-transport-ws', { perMessageDeflate: false, skipUTF8Validation: !record });
    const socket: LiveSocket = {
      index: spec.index,
      ws,
      pushes: 0,
      record: record ? { index: spec.index, postIds: spec.postIds, pushes: [] } : null,
    };
    let acked = false;
    const timer = setTimeout(
      () => fail(new Error(`socket ${spec.index}: no connection_ack within ${OPEN_TIMEOUT_MS} ms`)),
      OPEN_TIMEOUT_MS,
    );
    const fail = (error: Error) => {
      clearTimeout(timer);
      ws.terminate();
      reject(error);
    };
    ws.on('open', () => ws.send('{"type":"connection_init","payload":{}}'));
    ws.on('error', (error) => {
      if (!acked) fail(error);
      else note(`socket ${spec.index}: ${error.message}`);
    });
    ws.on('close', (code, reason) => {
      if (!acked) return fail(new Error(`socket ${spec.index} closed before connection_ack: ${code} ${reason}`));
      if (!closing) {
        closes[code] = (closes[code] ?? 0) + 1;
        note(`socket ${spec.index} closed by the server: ${code} ${reason}`);
      }
    });
    ws.on('message', (data: Buffer) => {
      if (!acked) {
        const message = JSON.parse(data.toString('utf8')) as { type?: string };
        if (message.type !== 'connection_ack') return fail(new Error(`socket ${spec.index}: expected connection_ack, got ${data}`));
        acked = true;
        clearTimeout(timer);
        sockets.push(socket);
        ws.send(JSON.stringify({ id: '1', type: 'subscribe', payload: { query, variables: { ids: spec.postIds } } }));
        return resolve();
      }
      if (socket.record) {
        const message = JSON.parse(data.toString('utf8')) as {
          type: string;
          payload?: { data?: { postCountsChanged: { id: string; counts: { likes: number } } }; errors?: unknown };
        };
        const post = message.payload?.data?.postCountsChanged;
        if (message.type === 'next' && post && !message.payload?.errors) {
          pushes += 1;
          socket.pushes += 1;
          socket.record.pushes.push(Number(post.id), post.counts.likes, Date.now());
          return;
        }
        if (message.type === 'ping') return ws.send('{"type":"pong"}');
        errors += 1;
        return note(`socket ${spec.index}: ${data}`);
      }
      // Counted without parsing: graphql-ws writes {"id":"1","type":"next","payload":{…}}.
      if (data.indexOf('"type":"next"') !== -1 && data.indexOf('"errors"') === -1) {
        pushes += 1;
        socket.pushes += 1;
        return;
      }
      if (data.indexOf('"type":"ping"') !== -1) return ws.send('{"type":"pong"}');
      errors += 1;
      note(`socket ${spec.index}: ${data}`);
    });
  });
}

async function openAll(url: string, query: string, specs: SocketSpec[], record: boolean): Promise<number> {
  let next = 0;
  const worker = async () => {
    while (next < specs.length) await openSocket(url, query, specs[next++]!, record);
  };
  await Promise.all(Array.from({ length: Math.min(OPEN_CONCURRENCY, specs.length) }, worker));
  return sockets.length;
}

async function closeAll(): Promise<number> {
  closing = true;
  const closed = sockets.map(
    (s) =>
      new Promise<void>((resolve) => {
        if (s.ws.readyState === WebSocket.CLOSED) return resolve();
        s.ws.once('close', () => resolve());
        s.ws.close(1000, 'bench done');
      }),
  );
  // Sockets the server does not answer within 10 s are cut.
  const timer = setTimeout(() => {
    for (const s of sockets) s.ws.terminate();
  }, 10_000);
  await Promise.all(closed);
  clearTimeout(timer);
  const n = sockets.length;
  sockets.length = 0;
  closing = false;
  return n;
}

function socketReport(): SocketReport {
  return {
    sockets: sockets.length,
    open: sockets.filter((s) => s.ws.readyState === WebSocket.OPEN).length,
    silent: sockets.filter((s) => s.pushes === 0).map((s) => s.index),
    pushes,
    errors,
    closes,
    unexpected,
    records: sockets.flatMap((s) => (s.record ? [s.record] : [])),
  };
}

// Pollers.
let polls = 0;
let pollFailures = 0;
let polling: { stop: () => Promise<void>; records: PollReport['records'] } | null = null;

function startPolling(url: string, query: string, specs: SocketSpec[], intervalMs: number) {
  let stopped = false;
  const records: PollReport['records'] = [];
  const agents: http.Agent[] = [];
  const loops = specs.map(async (spec) => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    agents.push(agent);
    const record = { index: spec.index, postIds: spec.postIds, polls: [] as number[] };
    records.push(record);
    const body = JSON.stringify({ query, variables: { ids: spec.postIds } });
    // Pollers start spread over one interval, as independent clients would.
    await new Promise((r) => setTimeout(r, Math.random() * intervalMs));
    while (!stopped) {
      const sentAt = Date.now();
      try {
        // A poll the API does not answer in time fails (and the poller goes on), so stopping never hangs.
        const { status, text } = await httpPost(`${url}/graphql`, body, { agent, timeoutMs: POLL_TIMEOUT_MS });
        if (status !== 200) throw new Error(`HTTP ${status}: ${text}`);
        const json = JSON.parse(text) as { data?: { posts: ({ counts: { likes: number } } | null)[] }; errors?: unknown };
        if (!json.data || json.errors) throw new Error(text);
        record.polls.push(sentAt, Date.now(), ...json.data.posts.map((p) => p?.counts.likes ?? Number.NaN));
        polls += 1;
      } catch (error) {
        pollFailures += 1;
        note(`poller ${spec.index}: ${(error as Error).message}`);
      }
      const wait = sentAt + intervalMs - Date.now();
      if (wait > 0 && !stopped) await new Promise((r) => setTimeout(r, wait));
    }
  });
  return {
    records,
    async stop() {
      stopped = true;
      await Promise.all(loops);
      for (const agent of agents) agent.destroy();
    },
  };
}

const commands: Record<string, (args: any) => unknown> = {
  open: (args: { url: string; query: string; sockets: SocketSpec[]; record: boolean }) =>
    openAll(args.url, args.query, args.sockets, args.record),
  mark: (): Mark => {
    const { idle, active } = performance.eventLoopUtilization();
    return { pushes, polls, loop: { idle, active } };
  },
  sockets: () => socketReport(),
  closeAll: () => closeAll(),
  startPolling: (args: { url: string; query: string; pollers: SocketSpec[]; intervalMs: number }) => {
    if (polling) throw new Error('already polling');
    polling = startPolling(args.url, args.query, args.pollers, args.intervalMs);
    return args.pollers.length;
  },
  stopPolling: async (): Promise<PollReport> => {
    if (!polling) throw new Error('not polling');
    await polling.stop();
    const report = { requests: polls, failures: pollFailures, unexpected, records: polling.records };
    polling = null;
    return report;
  },
};

// Never outlive the bench: when its IPC channel closes, drop every socket and exit.
process.on('disconnect', () => {
  for (const s of sockets) s.ws.terminate();
  process.exit(0);
});
serveParent(commands);
