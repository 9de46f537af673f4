// Open-loop load: GraphQL requests sent at a fixed rate whatever the answers before them did
// (a slow answer takes another connection instead of holding the next request back), so a
// slowed server sees the offered rate and its slowness shows in the latencies.
import http from 'node:http';
import { httpPost } from './httpPost.js';

export interface OpenLoopRequest {
  body: string;
  token: string;
}

export interface RequestRecord {
  /** Date.now() when sent and when answered (NaN when it failed). */
  sentAt: number;
  answeredAt: number;
  /** performance.now() from sent to answered; NaN when it failed. */
  latencyMs: number;
  ok: boolean;
}

/**
 * Sends `next(i)` for i = 0, 1, … at `perSecond` to `${url}/graphql` until stopped, or until
 * `count` are sent (`allSent` then resolves with the time of the last). `isOk` judges a 200
 * answer's body; anything else is a failure.
 */
export function startOpenLoop(options: {
  url: string;
  perSecond: number;
  next: (i: number) => OpenLoopRequest;
  isOk: (body: string) => boolean;
  /** Most connections at once (requests beyond wait for one, and their wait counts as latency). */
  maxSockets?: number;
  count?: number;
}) {
  const agent = openLoopAgent(options.maxSockets ?? 512);
  const records: RequestRecord[] = [];
  const failures: string[] = [];
  const answers: Promise<void>[] = [];
  const waiting = new Set<http.ClientRequest>();
  const started = Date.now();
  const count = options.count ?? Number.POSITIVE_INFINITY;
  let sent = 0;
  let stopped = false;
  let lastSent: (at: number) => void = () => {};
  const allSent = new Promise<number>((resolve) => (lastSent = resolve));

  const fire = async (request: OpenLoopRequest) => {
    const record: RequestRecord = { sentAt: Date.now(), answeredAt: Number.NaN, latencyMs: Number.NaN, ok: false };
    const t0 = performance.now();
    records.push(record);
    const why = await httpPost(`${options.url}/graphql`, request.body, { agent, token: request.token, track: waiting }).then(
      ({ status, text }) => (status === 200 && options.isOk(text) ? null : `HTTP ${status}: ${text}`),
      (error: Error) => error.message,
    );
    if (why === null) {
      record.ok = true;
      record.answeredAt = Date.now();
      record.latencyMs = performance.now() - t0;
    } else if (failures.length < 1000) failures.push(why.slice(0, 300));
  };

  // Due requests are computed from the clock, so a late timer sends the ones it owes at once.
  const tick = () => {
    if (stopped) return;
    const due = Math.min(count, Math.floor(((Date.now() - started) * options.perSecond) / 1000) + 1);
    while (sent < due) answers.push(fire(options.next(sent++)));
    if (sent < count) setTimeout(tick, 2);
    else lastSent(Date.now());
  };
  tick();

  return {
    startedAt: started,
    allSent,
    /** Stops sending; resolves once the answers are in, or abandoned `answerWaitMs` later (counted as `unanswered`). */
    async stop(answerWaitMs = 30_000) {
      stopped = true;
      const unanswered = await abandonAfter(answers, waiting, answerWaitMs);
      agent.destroy();
      return { records, failures, unanswered };
    },
  };
}

/**
 * Keep-alive connections for open-loop load. An idle connection is closed after 4 s, before
 * Tally's HTTP_KEEP_ALIVE_TIMEOUT_MS (5 s) does: reusing one the server is closing fails with
 * ECONNRESET, a race of the client's, not a failure of the server's.
 */
const openLoopAgent = (maxSockets: number) => new http.Agent({ keepAlive: true, maxSockets, timeout: 4000 });

/** Waits up to `waitMs` for `answers`, then fails every request still open; resolves with how many that were. */
async function abandonAfter(answers: Promise<unknown>[], waiting: Set<http.ClientRequest>, waitMs: number): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    Promise.all(answers).then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), waitMs);
    }),
  ]);
  clearTimeout(timer);
  const unanswered = late ? waiting.size : 0;
  for (const req of [...waiting]) req.destroy(new Error(`no answer ${waitMs / 1000} s after the load stopped`));
  await Promise.all(answers);
  return unanswered;
}
