// The account-erasure scenario's open-loop load and its latencies (docs/performance.md, "Account erasure").
import { percentile } from '../lib/freshness.js';
import { likeBody } from '../lib/load.js';
import { type RequestRecord, startOpenLoop } from '../lib/openLoop.js';
import { type ErasureWorld, LOAD_USERS } from './erasureWorld.js';

/** The README's feed query: a page with counts, the viewer's state and the authors. */
export const FEED_QUERY =
  'query Feed { feed(first: 20) { edges { cursor node { id title createdAt author { id name } counts { likes favs asOf } myState { liked faved } } } pageInfo { hasNextPage endCursor } } }';
/** The newest liked posts the load likes (and the feed shows). */
export const LIKED_BY_LOAD = 1000;
type LoadRun = { startedAt: number; records: Record<'feed' | 'like', RequestRecord[]> };

const answered = (records: readonly RequestRecord[]) => records.flatMap((r) => (r.ok ? [r.latencyMs] : [])).sort((a, b) => a - b);

function streamStats(records: readonly RequestRecord[], startedAt: number, seconds: number, failures: string[] = [], unanswered = 0) {
  const latencies = answered(records);
  const windowOf = (r: RequestRecord) => Math.floor((r.sentAt - startedAt) / 10_000);
  const windows = [...new Set(records.map(windowOf))].map((w) => answered(records.filter((r) => windowOf(r) === w)));
  // The worst 10 s window's p99, of windows with the 100 answers a p99 that is not just their maximum needs.
  const windowP99s = windows.filter((w) => w.length >= 100).map((w) => percentile(w, 99));
  return {
    sent: records.length,
    failures: records.length - latencies.length,
    unanswered,
    offeredPerS: records.length / seconds,
    achievedPerS: latencies.length / seconds,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN,
    failureSamples: failures.slice(0, 3),
  };
}

export function createLoad(url: string, world: ErasureWorld, rates: { feedPerS: number; likesPerS: number }) {
  const posts = world.likedPostIds.slice(-LIKED_BY_LOAD);
  const [L, P] = [LOAD_USERS.length, posts.length];
  const tokenOf = (j: number) => world.tokens.get(LOAD_USERS[j % L]!)!;
  const feedBody = JSON.stringify({ query: FEED_QUERY });
  let [feeds, likes] = [0, 0];
  const nextLike = () => {
    const j = likes++;
    if (j >= L * P) throw new Error(`the load has used every one of its ${L * P} (user, post) pairs`);
    return { body: likeBody(posts[(Math.floor(j / L) * (L + 1) + (j % L)) % P]!), token: tokenOf(j) };
  };
  const isFeed = (body: string) => body.includes('"edges"') && !body.includes('"errors"');
  return async <T>(until: (startedAt: number) => Promise<T>) => {
    const startedAt = Date.now();
    const feed = startOpenLoop({ url, perSecond: rates.feedPerS, next: () => ({ body: feedBody, token: tokenOf(feeds++) }), isOk: isFeed });
    const like = startOpenLoop({ url, perSecond: rates.likesPerS, next: nextLike, isOk: (body) => body.includes('"changed":true') });
    const stop = () => Promise.all([feed.stop(), like.stop()]);
    // The load stops whatever happened, so no request outlives the phase.
    const value = await until(startedAt).catch((error: unknown) => stop().then(() => Promise.reject(error)));
    const sendingS = (Date.now() - startedAt) / 1000;
    const [f, l] = await stop();
    const stats = (s: typeof f) => streamStats(s.records, startedAt, sendingS, s.failures, s.unanswered);
    return { startedAt, value, records: { feed: f.records, like: l.records }, feed: stats(f), like: stats(l) };
  };
}

/** A phase's load by the erasure phase it was sent in: the phase of the timeline's latest reading then (or of its first). */
export function byErasurePhase({ startedAt, records }: LoadRun, timeline: { atS: number; phase: string }[]) {
  const seconds = new Map<string, number>();
  for (const [i, t] of timeline.entries()) {
    seconds.set(t.phase, (seconds.get(t.phase) ?? 0) + (timeline[i + 1] ?? t).atS - (i === 0 ? 0 : t.atS));
  }
  const phaseAt = (r: RequestRecord) => timeline.findLast((t, i) => i === 0 || t.atS <= (r.sentAt - startedAt) / 1000)!.phase;
  const split = (stream: RequestRecord[]) => {
    const phases = stream.map(phaseAt);
    return (phase: string) => stream.filter((_, k) => phases[k] === phase);
  };
  const [feed, like] = [split(records.feed), split(records.like)];
  const stats = (sent: RequestRecord[], s: number) => streamStats(sent, startedAt, Math.max(s, 0.001));
  const phases = [...seconds].map(([phase, s]) => ({ phase, seconds: s, feed: stats(feed(phase), s), like: stats(like(phase), s) }));
  return phases.filter((x) => x.feed.sent + x.like.sent > 0);
}
