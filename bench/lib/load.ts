// Closed-loop load with autocannon from the parent process, and the one case/round timing path of feed, runtimes and gateway.
import autocannon from 'autocannon';
import type { ServerHandle } from './servers.js';

export type LoadOptions = { url: string; connections: number; durationS?: number; amount?: number; expectBody?: string } & {
  body?: string;
  headers?: Record<string, string>;
  next?: () => { body: string; headers: Record<string, string> };
  onBody?: (body: string) => void;
};

export type LoadResult = Awaited<ReturnType<typeof runLoad>>;

export async function runLoad(options: LoadOptions) {
  const { next, onBody } = options;
  const started = performance.now();
  let lastResponse = started;
  const request = {
    ...(next && {
      setupRequest: (request: autocannon.Request) => {
        const { body, headers } = next();
        return { ...request, body, headers: { ...request.headers, ...headers } };
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
    const instance = autocannon(opts, (error, result) => (error ? reject(error) : resolve(result)));
    instance.on('response', () => (lastResponse = performance.now()));
  });
  // Our own clock up to the last answer: autocannon rounds a fixed-amount run up to whole seconds.
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

type Sent = readonly { body: string; token: string }[];

export function sendAll(url: string, requests: Sent, connections: number, onBody?: (body: string) => void) {
  let k = 0;
  const next = () => {
    const { body, token } = requests[k++ % requests.length]!;
    return { body, headers: { authorization: `Bearer ${token}` } };
  };
  return runLoad({ url, connections, amount: requests.length, next, ...(onBody && { onBody }) });
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

const median = (values: readonly number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
const total = (rounds: readonly LoadResult[], key: 'requests' | 'durationS' | 'failures') => rounds.reduce((n, r) => n + r[key], 0);

const combineRounds = (rounds: readonly LoadResult[]): LoadResult => ({
  requests: total(rounds, 'requests'),
  durationS: total(rounds, 'durationS'),
  rps: total(rounds, 'requests') / total(rounds, 'durationS'),
  p50Ms: median(rounds.map((r) => r.p50Ms)),
  p99Ms: median(rounds.map((r) => r.p99Ms)),
  failures: total(rounds, 'failures'),
  lastResponseAt: Math.max(...rounds.map((r) => r.lastResponseAt)),
});

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
