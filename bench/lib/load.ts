// Load generation with autocannon, from the parent process (the server under test runs in
// its own process). One helper for both shapes of run: a fixed duration (reads) and a fixed
// number of requests (writes, where every request must be a distinct like).
import autocannon from 'autocannon';

export interface LoadOptions {
  url: string;
  connections: number;
  /** A fixed-duration run… */
  durationS?: number;
  /** …or a fixed number of requests. */
  amount?: number;
  /** Static request body and headers (ignored when `next` builds each request). */
  body?: string;
  headers?: Record<string, string>;
  /** Builds each request in turn: how the like scenario gives every request its own user and post. */
  next?: () => { body: string; headers: Record<string, string> };
  /** Every response must equal this body, or it counts as a mismatch. */
  expectBody?: string;
  /** Sees every response body (collecting bodies costs the generator a little). */
  onBody?: (body: string) => void;
}

export interface LoadResult {
  requests: number;
  durationS: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors, timeouts, non-2xx answers and unexpected bodies, all together. */
  failures: number;
  /** performance.now() of the last answer. */
  lastResponseAt: number;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const { next, onBody } = options;
  const started = performance.now();
  let lastResponse = started;
  const opts: autocannon.Options = {
    url: `${options.url}/graphql`,
    method: 'POST',
    connections: options.connections,
    ...(options.amount ? { amount: options.amount } : { duration: options.durationS ?? 5 }),
    headers: { 'content-type': 'application/json', ...options.headers },
    ...(options.body !== undefined ? { body: options.body } : {}),
    ...(options.expectBody !== undefined ? { expectBody: options.expectBody } : {}),
    ...(next || onBody
      ? {
          requests: [
            {
              ...(next && {
                setupRequest: (request: autocannon.Request) => {
                  const { body, headers } = next();
                  return { ...request, body, headers: { ...request.headers, ...headers } };
                },
              }),
              ...(onBody && { onResponse: (_status: number, body: string) => onBody(body) }),
            },
          ],
        }
      : {}),
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(opts, (error, result) => (error ? reject(error) : resolve(result)));
    instance.on('response', () => (lastResponse = performance.now()));
  });
  // Our own clock, up to the last answer: autocannon notices that a fixed-amount run is
  // done only on its next 1 s tick, so its `duration` is rounded up to whole seconds.
  const durationS = (lastResponse - started) / 1000;
  const requests = result.requests.total;
  return {
    requests,
    durationS,
    rps: requests / durationS,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    failures: result.errors + result.timeouts + result.non2xx + result.mismatches,
    lastResponseAt: lastResponse,
  };
}

const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
/** The body of a like of `postId` (a client's `setLikeRelation`); its answer says `"changed":true` when it counted. */
export const likeBody = (postId: number | string) =>
  JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), active: true } } });

/** One GraphQL request with fetch, for set-up and correctness checks outside the timed runs. */
export async function gql<T = any>(url: string, query: string, variables: Record<string, unknown> = {}, token?: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token && { authorization: `Bearer ${token}` }) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await res.text();
  const json = JSON.parse(text) as { data?: T; errors?: { message: string }[] };
  if (res.status !== 200 || json.errors) throw new Error(`GraphQL request failed (${res.status}): ${text.slice(0, 500)}`);
  return { data: json.data as T, text };
}

const median = (values: readonly number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
};

/** Rounds of one case as one result: req/s over their summed time, the median round's p50 and p99. */
export function combineRounds(rounds: readonly LoadResult[]): LoadResult {
  const requests = rounds.reduce((n, r) => n + r.requests, 0);
  const durationS = rounds.reduce((n, r) => n + r.durationS, 0);
  return {
    requests,
    durationS,
    rps: requests / durationS,
    p50Ms: median(rounds.map((r) => r.p50Ms)),
    p99Ms: median(rounds.map((r) => r.p99Ms)),
    failures: rounds.reduce((n, r) => n + r.failures, 0),
    lastResponseAt: Math.max(...rounds.map((r) => r.lastResponseAt)),
  };
}
