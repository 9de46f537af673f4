// Load from the bench process: its own HTTP client, the one open-loop sender (requests at a fixed rate whatever the answers before
// them did), closed-loop load with autocannon, and the one case/round timing path of feed, runtimes and gateway.
import http from 'node:http';
import type autocannon from 'autocannon';
import type { ServerHandle } from './servers.js';

export interface PostOptions {
  agent?: http.Agent;
  token?: string | undefined;
  timeoutMs?: number;
  /** Holds the request until it settles, so a caller can abandon the ones still open. */
  track?: Set<http.ClientRequest>;
}

export function httpPost(url: string, body: string, options: PostOptions = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    // Only the first call counts: a promise settles once, and the request leaves `track` then.
    const settle = (error: Error | null, answer?: { status: number; text: string }) => {
      options.track?.delete(req);
      if (error) reject(error);
      else resolve(answer!);
    };
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const req = http.request(url, { method: 'POST', agent: options.agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => settle(null, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', settle);
    });
    req.on('error', settle);
    req.on('close', () => settle(new Error('connection closed before the answer')));
    if (options.timeoutMs) req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    options.track?.add(req);
    req.end(body);
  });
}

export async function postGraphQL<T = any>(url: string, body: string, options: PostOptions = {}) {
  const { status, text } = await httpPost(`${url}/graphql`, body, options);
  const json = JSON.parse(text) as { data?: T; errors?: unknown };
  if (status !== 200 || json.errors || !json.data) throw new Error(`GraphQL request failed (${status}): ${text.slice(0, 500)}`);
  return { data: json.data, text };
}

export const gql = <T = any>(url: string, query: string, variables: Record<string, unknown> = {}, token?: string) =>
  postGraphQL<T>(url, JSON.stringify({ query, variables }), { token });

const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
export const likeBody = (postId: number | string) =>
  JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), active: true } } });
export const changed = (body: string) => body.includes('"changed":true');

export type OpenLoopRequest = { body: string; token: string };
/** Date.now() when sent and answered, performance.now() latency; NaN when it failed. */
export type RequestRecord = { sentAt: number; answeredAt: number; latencyMs: number; ok: boolean };

/** Sends `next(i)` at `perSecond` until stopped or `count` are sent (`allSent` resolves then); `isOk` judges a 200's body. */
export function startOpenLoop(options: {
  url: string;
  perSecond: number;
  next: (i: number) => OpenLoopRequest;
  isOk: (body: string) => boolean;
  maxSockets?: number;
  count?: number;
}) {
  // Idle connections close after 4 s, before Tally's 5 s keep-alive timeout would race a reuse.
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 512, timeout: 4000 });
  const [records, failures, answers] = [[] as RequestRecord[], [] as string[], [] as Promise<void>[]];
  const waiting = new Set<http.ClientRequest>();
  const started = Date.now();
  const count = options.count ?? Number.POSITIVE_INFINITY;
  let [sent, stopped] = [0, false];
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
    if (why === null) Object.assign(record, { ok: true, answeredAt: Date.now(), latencyMs: performance.now() - t0 });
    else if (failures.length < 1000) failures.push(why.slice(0, 300));
  };
  // Due requests come from the clock, so a late timer sends the ones it owes at once.
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
    /** Stops sending; resolves once the answers are in, or `answerWaitMs` later with the rest abandoned (`unanswered`). */
    async stop(answerWaitMs = 30_000) {
      stopped = true;
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([Promise.all(answers), new Promise((resolve) => (timer = setTimeout(resolve, answerWaitMs)))]);
      clearTimeout(timer);
      const unanswered = waiting.size; // an answered request has left `waiting`
      for (const req of [...waiting]) req.destroy(new Error(`no answer ${answerWaitMs / 1000} s after the load stopped`));
      await Promise.all(answers);
      agent.destroy();
      return { records, failures, unanswered };
    },
  };
}

export type LoadOptions = { url: string; connections: number; durationS?: number; amount?: number; expectBody?: string } & {
  body?: string;
  headers?: Record<string, string>;
  next?: () => OpenLoopRequest;
  onBody?: (body: string) => void;
};

export type LoadResult = Awaited<ReturnType<typeof runLoad>>;

export async function runLoad(options: LoadOptions) {
  const { next, onBody } = options;
  const start = (await import('autocannon')).default; // not loaded by the live clients, which only post
  const started = performance.now();
  let lastResponse = started;
  const request = {
    ...(next && {
      setupRequest: (request: autocannon.Request) => {
        const { body, token } = next();
        return { ...request, body, headers: { ...request.headers, authorization: `Bearer ${token}` } };
      },
    }),
    ...(onBody && { onResponse: (_status: number, body: string) => onBody(body) }),
  };
  const opts: autocannon.Options = {
    url: `${options.url}/graphql`,
    method: 'POST',
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.durationS ?? 5 }),
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(options.body !== undefined && { body: options.body }),
    ...(options.expectBody !== undefined && { expectBody: options.expectBody }),
    ...((next || onBody) && { requests: [request] }),
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = start(opts, (error, result) => (error ? reject(error) : resolve(result)));
    instance.on('response', () => (lastResponse = performance.now()));
  });
  // Our own clock up to the last answer: autocannon rounds a fixed-amount run up to whole seconds.
  const durationS = (lastResponse - started) / 1000;
  const requests = result.requests.total;
  const failures = result.errors + result.timeouts + result.non2xx + result.mismatches;
  const { p50: p50Ms, p99: p99Ms } = result.latency;
  return { requests, durationS, rps: requests / durationS, p50Ms, p99Ms, failures, lastResponseAt: lastResponse };
}

export function sendAll(url: string, requests: readonly OpenLoopRequest[], connections: number, onBody?: (body: string) => void) {
  let k = 0;
  return runLoad({ url, connections, amount: requests.length, next: () => requests[k++ % requests.length]!, onBody });
}

/** Every user's first request, not timed (Tally creates and caches the user). */
export async function firstSight(url: string, tokens: readonly string[]) {
  const body = JSON.stringify({ query: '{ __typename }' });
  const requests = tokens.map((token) => ({ body, token }));
  const { failures } = await sendAll(url, requests, 32);
  if (failures > 0) throw new Error(`${failures} first-sight requests failed`);
}

export async function redisPerRequest(server: ServerHandle, work: () => Promise<number>) {
  const before = await server.redisStats();
  const requests = await work();
  const after = await server.redisStats();
  if (!before || !after) return null;
  return { roundTrips: (after.roundTrips - before.roundTrips) / requests, commands: (after.commands - before.commands) / requests };
}

export const [CONNECTIONS, ROUNDS] = [16, 3];
/** A timed request: every answer must be `expectBody`; `settle` waits until what a run left in flight is done. */
export type TimedCase = { label: string; url: string; body: string; headers: Record<string, string>; expectBody: string } & {
  settle(): Promise<void>;
};
export const loadCase = (c: TimedCase, more: Partial<LoadOptions>) =>
  runLoad({ url: c.url, connections: CONNECTIONS, body: c.body, headers: c.headers, expectBody: c.expectBody, ...more });
export const warmUp = (c: TimedCase, seconds: number) => loadCase(c, { durationS: seconds }).then(c.settle);

const combineRounds = (rounds: readonly LoadResult[]): LoadResult => {
  const total = (key: 'requests' | 'durationS' | 'failures') => rounds.reduce((n, r) => n + r[key], 0);
  const median = (key: 'p50Ms' | 'p99Ms') => rounds.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rounds.length / 2)]!;
  const [requests, durationS, failures] = [total('requests'), total('durationS'), total('failures')];
  const [p50Ms, p99Ms] = [median('p50Ms'), median('p99Ms')];
  const lastResponseAt = Math.max(...rounds.map((r) => r.lastResponseAt));
  return { requests, durationS, rps: requests / durationS, p50Ms, p99Ms, failures, lastResponseAt };
};

export async function timeInRounds<C extends TimedCase>(cases: readonly C[], durationS: number, alternate = false) {
  const results = cases.map((): LoadResult[] => []);
  for (let round = 1; round <= ROUNDS; round++) {
    const order = cases.map((_, i) => i);
    for (const i of alternate && round % 2 === 0 ? order.reverse() : order) {
      results[i]!.push(await loadCase(cases[i]!, { durationS: durationS / ROUNDS }));
      await cases[i]!.settle();
    }
    const rates = cases.map((c, i) => `${c.label} ${results[i]!.at(-1)!.rps.toFixed(0)}`);
    console.log(`  round ${round}/${ROUNDS}: ${rates.join(', ')} req/s`);
  }
  return results.map((r) => ({ load: combineRounds(r), rounds: r.map((x) => Number(x.rps.toFixed(1))) }));
}
