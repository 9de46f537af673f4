// Freshness of a count as a client sees it, and the percentiles the bench reports.
import http from 'node:http';
import { postGraphQL } from './load.js';

export const POLL_INTERVAL_MS = 10;
type Poll = { sentAt: number; at: number; count: number };

export const sum = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);
export const sortUp = (a: number[]) => a.sort((x, y) => x - y);
export const round1 = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(1)) : null);
/** Nearest-rank percentile of sorted values. */
export const percentile = (sorted: readonly number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;

export function graphqlReader(url: string, query: string, variables: Record<string, unknown>, pick: (data: any) => number) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const body = JSON.stringify({ query, variables });
  return { read: async () => pick((await postGraphQL(url, body, { agent })).data), close: () => agent.destroy() };
}

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
  loop.catch(() => {}); // a failed read is stop()'s to throw
  return {
    latest: () => polls.at(-1)?.count ?? null,
    stop: (): Promise<Poll[]> => {
      stopped = true;
      return loop.then(() => polls);
    },
  };
}

export function inclusionLags(sortedAcks: readonly number[], observations: readonly { at: number; count: number }[], baseCount: number) {
  const lags: number[] = [];
  let p = 0;
  let seen = -Infinity;
  for (let k = 1; k <= sortedAcks.length; k++) {
    while (p < observations.length && seen < k) seen = Math.max(seen, observations[p++]!.count - baseCount);
    lags.push(seen < k ? Infinity : Math.max(0, observations[p - 1]!.at - sortedAcks[k - 1]!));
  }
  return lags;
}

export function lagStats(lags: number[]) {
  sortUp(lags);
  const at = (p: number) => round1(percentile(lags, p));
  return { included: lags.filter(Number.isFinite).length, p50Ms: at(50), p99Ms: at(99), maxMs: round1(lags.at(-1) ?? NaN) };
}

export function measureFreshness(acks: readonly number[], polls: readonly Poll[], baseCount: number) {
  const sortedAcks = sortUp([...acks]);
  const lags = inclusionLags(sortedAcks, polls, baseCount);
  const latencies = sortUp(polls.map((q) => q.at - q.sentAt));
  const span = polls.length > 1 ? (polls.at(-1)!.sentAt - polls[0]!.sentAt) / (polls.length - 1) : NaN;
  return {
    pollIntervalMs: POLL_INTERVAL_MS,
    acknowledgements: sortedAcks.length,
    ...lagStats(lags),
    polls: polls.length,
    meanPollIntervalMs: round1(span),
    pollLatencyP50Ms: round1(percentile(latencies, 50)),
    pollLatencyP99Ms: round1(percentile(latencies, 99)),
  };
}
