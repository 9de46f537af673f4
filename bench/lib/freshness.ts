// Freshness of a counter as a client sees it: how long after a mutation's acknowledgement a
// read of the count includes it (docs/performance.md, "The bench": hot post).
import http from 'node:http';
import { httpPost } from './httpPost.js';

export const POLL_INTERVAL_MS = 10;

interface Poll {
  sentAt: number;
  at: number;
  count: number;
}

/** Reads `pick(data)` of a GraphQL document, over one dedicated keep-alive connection. */
export function graphqlReader(url: string, query: string, variables: Record<string, unknown>, pick: (data: any) => number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ query, variables });
  const read = async () => {
    const { status, text } = await httpPost(`${url}/graphql`, body, { agent });
    const json = JSON.parse(text) as { data?: unknown; errors?: unknown };
    if (status !== 200 || json.errors) throw new Error(`count query failed (${status}): ${text.slice(0, 300)}`);
    return pick(json.data);
  };
  return { read, close: () => agent.destroy() };
}

/** Reads the count one poll at a time, a new one at most every `intervalMs`; `stop()` returns every poll. */
export function startCountPoller(read: () => Promise<number>, intervalMs = POLL_INTERVAL_MS) {
  const polls: Poll[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const sentAt = performance.now();
      const count = await read();
      polls.push({ sentAt, at: performance.now(), count });
      const wait = sentAt + intervalMs - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  })();
  // A failed read ends the loop; the error surfaces in stop(), not as an unhandled rejection.
  let failure: unknown = null;
  loop.catch((error: unknown) => (failure = error ?? new Error('count poll failed')));
  return {
    /** The latest count answered, or null before the first answer. */
    latest: () => polls.at(-1)?.count ?? null,
    async stop(): Promise<Poll[]> {
      stopped = true;
      await loop.catch(() => {});
      if (failure) throw failure;
      return polls;
    },
  };
}

/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

const round = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(1)) : null);

/**
 * How long after each acknowledgement a reader saw it: the k-th of `sortedAcks` (ascending)
 * is seen by the first observation (in arrival order) whose count minus `baseCount` is >= k,
 * its lag that observation's `at` minus the acknowledgement, floored at 0; Infinity if none
 * did. Observations may be polls or pushes; `at` and the acknowledgements on one clock.
 */
export function inclusionLags(
  sortedAcks: readonly number[],
  observations: readonly { at: number; count: number }[],
  baseCount: number,
): number[] {
  const lags: number[] = [];
  let p = 0;
  let seen = -Infinity; // the highest count observed so far: "first observation whose count >= k"
  for (let k = 1; k <= sortedAcks.length; k++) {
    while (p < observations.length && seen < k) seen = Math.max(seen, observations[p++]!.count - baseCount);
    if (seen < k) {
      lags.push(Infinity);
      continue;
    }
    lags.push(Math.max(0, observations[p - 1]!.at - sortedAcks[k - 1]!));
  }
  return lags;
}

/**
 * `acks`: performance.now() of each acknowledgement; `polls` in the order they answered;
 * `baseCount`: the count before the run.
 */
export function measureFreshness(acks: readonly number[], polls: readonly Poll[], baseCount: number) {
  const sortedAcks = [...acks].sort((a, b) => a - b);
  const lags = inclusionLags(sortedAcks, polls, baseCount).sort((a, b) => a - b);
  const latencies = polls.map((q) => q.at - q.sentAt).sort((a, b) => a - b);
  const span = polls.length > 1 ? (polls.at(-1)!.sentAt - polls[0]!.sentAt) / (polls.length - 1) : NaN;
  return {
    pollIntervalMs: POLL_INTERVAL_MS,
    acknowledgements: sortedAcks.length,
    /** Acknowledgements some poll included before the watch ended; null p50/p99/max = Infinity (some were never seen). */
    included: lags.filter(Number.isFinite).length,
    p50Ms: round(percentile(lags, 50)),
    p99Ms: round(percentile(lags, 99)),
    maxMs: round(lags.at(-1) ?? NaN),
    polls: polls.length,
    meanPollIntervalMs: round(span),
    pollLatencyP50Ms: round(percentile(latencies, 50)),
    pollLatencyP99Ms: round(percentile(latencies, 99)),
  };
}
