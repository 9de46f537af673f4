// Open-loop load: GraphQL requests sent at a fixed rate, each at its time whatever the
// answers before it did (a slow answer takes another connection instead of holding the next
// request back), so a slowed server sees the offered rate and its slowness shows in the
// latencies, not in fewer requests. Every request is recorded: when it was sent, how long its
// answer took, whether it was right.
import http from 'node:http';

/** One request: body, bearer token, and how to tell a right answer. */
export interface OpenLoopRequest {
  body: string;
  token: string;
}

export interface RequestRecord {
  /** Date.now() when the request was sent. */
  sentAt: number;
  /** Sent → answer received, ms; NaN when it failed. */
  latencyMs: number;
  ok: boolean;
}

export interface OpenLoopStream {
  /** Stops sending; resolves with every request's record once the answers are in (or abandoned after `answerWaitMs`). */
  stop(answerWaitMs?: number): Promise<{ records: RequestRecord[]; failures: string[]; unanswered: number }>;
}

/**
 * Sends `next(i)` for i = 0, 1, … at `perSecond` to `${url}/graphql` until stopped. `isOk`
 * judges a 200 answer's body (anything else is a failure).
 */
export function startOpenLoop(options: {
  url: string;
  perSecond: number;
  next: (i: number) => OpenLoopRequest;
  isOk: (body: string) => boolean;
  /** Most connections at once (requests beyond wait for one, and their wait counts as latency). */
  maxSockets?: number;
}): OpenLoopStream {
  const agent = openLoopAgent(options.maxSockets ?? 512);
  const records: RequestRecord[] = [];
  const failures: string[] = [];
  const answers: Promise<void>[] = [];
  const waiting = new Set<http.ClientRequest>();
  const started = Date.now();
  let sent = 0;
  let stopped = false;

  const fire = async (request: OpenLoopRequest) => {
    const record: RequestRecord = { sentAt: Date.now(), latencyMs: Number.NaN, ok: false };
    const t0 = performance.now();
    records.push(record);
    const why = await postGraphql({ url: options.url, agent, waiting, ...request, isOk: options.isOk });
    if (why === null) {
      record.ok = true;
      record.latencyMs = performance.now() - t0;
    } else if (failures.length < 1000) failures.push(why.slice(0, 300));
  };

  // Due requests are computed from the clock, so a late timer sends the ones it owes at once.
  const tick = () => {
    if (stopped) return;
    const due = Math.floor(((Date.now() - started) * options.perSecond) / 1000) + 1;
    while (sent < due) answers.push(fire(options.next(sent++)));
    setTimeout(tick, 2);
  };
  tick();

  return {
    async stop(answerWaitMs = 30_000) {
      stopped = true;
      const unanswered = await abandonAfter(answers, waiting, answerWaitMs, 'after the load stopped');
      agent.destroy();
      return { records, failures, unanswered };
    },
  };
}

/**
 * Keep-alive connections for open-loop load. An idle connection is closed after 4 s, before
 * Tally's HTTP_KEEP_ALIVE_TIMEOUT_MS (5 s) closes it: reusing one the server is closing at
 * that moment fails with ECONNRESET, a race of the client's, not a failure of the server's.
 * (The agent's timeout only closes free sockets; a request waiting for its answer is kept.)
 */
export const openLoopAgent = (maxSockets: number) => new http.Agent({ keepAlive: true, maxSockets, timeout: 4000 });

/**
 * POSTs one GraphQL request to `${url}/graphql`; resolves with null when the answer is a 200
 * that `isOk` accepts, else with why not. The request is in `waiting` until it settles, so a
 * caller can abandon the ones still open.
 */
export function postGraphql(options: {
  url: string;
  agent: http.Agent;
  waiting: Set<http.ClientRequest>;
  body: string;
  token: string;
  isOk: (body: string) => boolean;
}): Promise<string | null> {
  return new Promise((resolve) => {
    let settled = false;
    const settle = (why: string | null) => {
      if (settled) return;
      settled = true;
      options.waiting.delete(req);
      resolve(why);
    };
    const req = http.request(
      `${options.url}/graphql`,
      {
        method: 'POST',
        agent: options.agent,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(options.body),
          authorization: `Bearer ${options.token}`,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          settle(res.statusCode === 200 && options.isOk(text) ? null : `HTTP ${res.statusCode}: ${text}`);
        });
        res.on('error', (error) => settle(error.message));
      },
    );
    req.on('error', (error) => settle(error.message));
    req.on('close', () => settle('connection closed before the answer'));
    options.waiting.add(req);
    req.end(options.body);
  });
}

/**
 * Waits up to `waitMs` for `answers`; then every request still in `waiting` (sent, or queued
 * for a connection) fails. Resolves, once all have settled, with how many were abandoned.
 */
export async function abandonAfter(
  answers: Promise<unknown>[],
  waiting: Set<http.ClientRequest>,
  waitMs: number,
  when: string,
): Promise<number> {
  let timer: NodeJS.Timeout | undefined;
  const late = await Promise.race([
    Promise.all(answers).then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), waitMs);
    }),
  ]);
  clearTimeout(timer);
  const unanswered = late ? waiting.size : 0;
  for (const req of [...waiting]) req.destroy(new Error(`no answer ${waitMs / 1000} s ${when}`));
  await Promise.all(answers);
  return unanswered;
}
