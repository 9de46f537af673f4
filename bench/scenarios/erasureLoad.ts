// The account-erasure scenario's load: feed pages and likes by other users sent open loop at
// fixed rates (bench/lib/openLoop.ts), and its latencies per phase, per 10 s window and per
// erasure phase.
import { percentile } from '../lib/freshness.js';
import { type RequestRecord, startOpenLoop } from '../lib/openLoop.js';
import type { ErasureSettings } from './erasure.js';
import type { ErasureWorld } from './erasureSeed.js';

/** The README's feed query: a page with counts, the viewer's state and the authors. */
export const FEED_QUERY =
  'query Feed { feed(first: 20) { edges { cursor node { id title createdAt author { id name } counts { likes favs asOf } myState { liked faved } } } pageInfo { hasNextPage endCursor } } }';
const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
/** The newest liked posts the load likes (and the feed shows): each like a new (user, post) pair. */
export const LIKED_BY_LOAD = 1000;
/** Latency windows for the "worst 10 s" figure. */
const WINDOW_MS = 10_000;

export type StreamStats = ReturnType<typeof streamStats>;

export function streamStats(
  records: readonly RequestRecord[],
  startedAt: number,
  sendingS: number,
  failureSamples: string[],
  unanswered: number,
) {
  const latencies = records.filter((r) => r.ok).map((r) => r.latencyMs);
  latencies.sort((a, b) => a - b);
  const windows = new Map<number, number[]>();
  for (const r of records) {
    if (!r.ok) continue;
    const w = Math.floor((r.sentAt - startedAt) / WINDOW_MS);
    windows.set(w, [...(windows.get(w) ?? []), r.latencyMs]);
  }
  // A window needs 100 answers for a p99 that is not just its maximum.
  const windowP99s = [...windows.values()]
    .filter((w) => w.length >= 100)
    .map((w) =>
      percentile(
        w.sort((a, b) => a - b),
        99,
      ),
    );
  return {
    sent: records.length,
    ok: latencies.length,
    failures: records.length - latencies.length,
    unanswered,
    offeredPerS: records.length / sendingS,
    achievedPerS: latencies.length / sendingS,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxMs: latencies.at(-1) ?? Number.NaN,
    worstWindowP99Ms: windowP99s.length > 0 ? Math.max(...windowP99s) : Number.NaN,
    failureSamples: failureSamples.slice(0, 3),
  };
}

interface Load {
  url: string;
  feedPerS: number;
  likesPerS: number;
  nextFeed: () => { body: string; token: string };
  nextLike: () => { body: string; token: string };
}

/** Every request of a phase, for latency by erasure phase. */
interface PhaseRecords {
  startedAt: number;
  feed: RequestRecord[];
  like: RequestRecord[];
}

/**
 * The load's requests. The j-th like is user j % L on post (q(L + 1) + j % L) % P of the newest
 * P liked posts, q = ⌊j / L⌋: a (user, post) pair never liked before for j < L × P, since
 * L + 1 and P are coprime (L = P = 1000), so every like changes a count.
 */
export function createLoad(url: string, world: ErasureWorld, settings: ErasureSettings): Load {
  const users = world.loadUsers;
  const posts = world.likedPostIds.slice(-LIKED_BY_LOAD);
  const L = users.length;
  const P = posts.length;
  const feedBody = JSON.stringify({ query: FEED_QUERY });
  let feeds = 0;
  let likes = 0;
  return {
    url,
    feedPerS: settings.feedPerS,
    likesPerS: settings.likesPerS,
    nextFeed: () => ({ body: feedBody, token: world.tokens.get(users[feeds++ % L]!)! }),
    nextLike: () => {
      const j = likes++;
      if (j >= L * P) throw new Error(`the load has used every one of its ${L * P} (user, post) pairs`);
      const q = Math.floor(j / L);
      const postId = posts[(q * (L + 1) + (j % L)) % P]!;
      return {
        body: JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), kind: 'LIKE', active: true } } }),
        token: world.tokens.get(users[j % L]!)!,
      };
    },
  };
}

/** Runs the load until `until` resolves; the answers are waited for, then summed up. */
export async function runPhaseLoad<T>(load: Load, until: (startedAt: number) => Promise<T>) {
  const startedAt = Date.now();
  const feed = startOpenLoop({
    url: load.url,
    perSecond: load.feedPerS,
    next: load.nextFeed,
    isOk: (body) => body.includes('"edges"') && !body.includes('"errors"'),
  });
  const like = startOpenLoop({
    url: load.url,
    perSecond: load.likesPerS,
    next: load.nextLike,
    isOk: (body) => body.includes('"changed":true'),
  });
  // The load stops whatever happened, so no request outlives the phase.
  const outcome = await until(startedAt).then(
    (value) => ({ value, error: null }),
    (error: unknown) => ({ value: null, error }),
  );
  const stopped = Date.now();
  const [f, l] = await Promise.all([feed.stop(), like.stop()]);
  if (outcome.error !== null) throw outcome.error;
  const extra = outcome.value as T;
  const sendingS = (stopped - startedAt) / 1000;
  return {
    sendingS,
    records: { startedAt, feed: f.records, like: l.records },
    extra,
    feed: streamStats(f.records, startedAt, sendingS, f.failures, f.unanswered),
    like: streamStats(l.records, startedAt, sendingS, l.failures, l.unanswered),
  };
}

/** The phase 2 load's latencies by the erasure phase each request was sent in (timeline order). */
export function byErasurePhase(records: PhaseRecords, timeline: readonly { atS: number; phase: string }[]) {
  // Consecutive stretches of one phase, merged by name (a second round of facts adds to the first).
  const stretches: { phase: string; fromS: number; toS: number }[] = [];
  timeline.forEach((t, i) => {
    const toS = timeline[i + 1]?.atS ?? Number.POSITIVE_INFINITY;
    const last = stretches.at(-1);
    if (last && last.phase === t.phase) last.toS = toS;
    else stretches.push({ phase: t.phase, fromS: i === 0 ? 0 : t.atS, toS });
  });
  const phaseAt = (sentAt: number) => {
    const s = (sentAt - records.startedAt) / 1000;
    return stretches.find((x) => s >= x.fromS && s < x.toS)?.phase ?? 'done';
  };
  const names = [...new Set(stretches.map((s) => s.phase))];
  return names
    .map((phase) => {
      const feed = records.feed.filter((r) => phaseAt(r.sentAt) === phase);
      const like = records.like.filter((r) => phaseAt(r.sentAt) === phase);
      const seconds = stretches.filter((s) => s.phase === phase).reduce((n, s) => n + Math.min(s.toS, timeline.at(-1)!.atS) - s.fromS, 0);
      return {
        phase,
        seconds,
        feed: streamStats(feed, records.startedAt, Math.max(seconds, 0.001), [], 0),
        like: streamStats(like, records.startedAt, Math.max(seconds, 0.001), [], 0),
      };
    })
    .filter((x) => x.feed.sent + x.like.sent > 0);
}
