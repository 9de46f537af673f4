// The bench's own HTTP client: one JSON POST, GraphQL over it, and the one open-loop sender (requests at a fixed rate whatever
// the answers before them did).
import http from 'node:http';

export interface PostOptions {
  agent?: http.Agent;
  token?: string | undefined;
  timeoutMs?: number;
  /** Holds the request until it settles, so a caller can abandon the ones still open. */
  track?: Set<http.ClientRequest>;
}

export function httpPost(url: string, body: string, options: PostOptions = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null, answer?: { status: number; text: string }) => {
      if (settled) return;
      settled = true;
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
      const late = await Promise.race([
        Promise.all(answers).then(() => false),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), answerWaitMs))),
      ]);
      clearTimeout(timer);
      const unanswered = late ? waiting.size : 0;
      for (const req of [...waiting]) req.destroy(new Error(`no answer ${answerWaitMs / 1000} s after the load stopped`));
      await Promise.all(answers);
      agent.destroy();
      return { records, failures, unanswered };
    },
  };
}
