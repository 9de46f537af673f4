// The live counts scenario's settings and what it measures besides CPU: the likes sent open
// loop and their acknowledgements per post, latency of pushes and polls, pushes due, the API's
// memory, settled counts.
import { intSetting } from '../lib/env.js';
import { inclusionLags, percentile } from '../lib/freshness.js';
import type { LiveCommands } from '../lib/liveClientProcess.js';
import { gql, likeBody } from '../lib/load.js';
import { startOpenLoop } from '../lib/openLoop.js';
import { rssBytes } from '../lib/procStats.js';
import type { ServerHandle } from '../lib/servers.js';
import { waitFor, waitForQuiet } from '../lib/waitFor.js';

export const LIVE_POSTS = 100;
/** Posts each socket or poller watches. */
export const WATCHED = 20;
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
/** Connections the likes may take at once (open loop: a slow answer takes another one). */
export const LIKE_CONNECTIONS = 1024;
/** How long after the last like is sent its answers may take before they are abandoned. */
export const ANSWER_WAIT_MS = 30_000;
/** A phase ends, and counts are settled, once nothing moved for this long. */
export const QUIET_MS = 2000;
/**
 * The j-th like of the run is user FIRST_LIKER + j % LIKERS on post (j + ⌊j / LIKERS⌋) % 100:
 * a (user, post) pair never liked before for j < 100 × LIKERS (LIKERS + 1 and 100 are
 * coprime), so every like changes a count and each post's likes come from distinct users.
 */
export const FIRST_LIKER = 1000;
export const LIKERS = 1000;

export type LiveSettings = ReturnType<typeof liveSettings>;

export function liveSettings(env: NodeJS.ProcessEnv = process.env) {
  const int = (name: string, fallback: number, max: number) => intSetting(env, name, fallback, 1, max);
  // WS_MAX_CONNECTIONS_PER_CLIENT allows at most 100,000 sockets from one address.
  const sockets = int('BENCH_LIVE_SOCKETS', 10_000, 100_000);
  return {
    sockets,
    pollers: int('BENCH_LIVE_POLLERS', 200, 100_000),
    likesPerS: int('BENCH_LIVE_LIKES_PER_S', 200, 10_000),
    durationS: int('BENCH_LIVE_DURATION_S', 30, 3600),
    /** Processes holding the sockets that are not timed (the timed ones have one more). */
    clientProcesses: int('BENCH_LIVE_CLIENT_PROCESSES', 2, 64),
    /** Sockets whose every push is timed (a random sample, in a client process of their own). */
    sampledSockets: Math.min(200, sockets),
  };
}

/** The API's RSS, and its V8 heap in use + memory outside it (buffers) after a full GC. */
export async function apiMemory(api: ServerHandle) {
  const m = await api.memory();
  if (!m.collected) throw new Error('the API was started without --expose-gc');
  return { live: m.heapUsed + m.external, rss: rssBytes(api.pid) };
}

type Memory = Awaited<ReturnType<typeof apiMemory>>;
export const memoryPerClient = (before: Memory, withClients: Memory, count: number, endBytes: number) => ({
  beforeBytes: before.rss,
  withClientsBytes: withClients.rss,
  endBytes,
  perClientBytes: (withClients.rss - before.rss) / count,
  liveBeforeBytes: before.live,
  liveWithClientsBytes: withClients.live,
  livePerClientBytes: (withClients.live - before.live) / count,
});

/** The run's likes in order: `next(count)` gives the following `count`. */
export function likeSchedule(postIds: readonly string[], tokens: readonly string[]) {
  let sent = 0;
  return (count: number) => {
    if (sent + count > LIKERS * LIVE_POSTS) throw new Error(`at most ${LIKERS * LIVE_POSTS} likes per run`);
    return Array.from({ length: count }, () => {
      const j = sent++;
      const post = (j + Math.floor(j / LIKERS)) % LIVE_POSTS;
      return { post, token: tokens[j % LIKERS]!, body: likeBody(postIds[post]!) };
    });
  };
}

/** Sends `likes` at `rate` per second, open loop, and sorts their answers by post. */
export async function sendLikes(url: string, likes: ReturnType<ReturnType<typeof likeSchedule>>, rate: number) {
  const loop = startOpenLoop({
    url,
    perSecond: rate,
    next: (i) => likes[i]!,
    isOk: (text) => text.includes('"changed":true'),
    maxSockets: LIKE_CONNECTIONS,
    count: likes.length,
  });
  const lastSentAt = await loop.allSent;
  const { records, failures, unanswered } = await loop.stop(ANSWER_WAIT_MS);
  const perPost = () => Array.from({ length: LIVE_POSTS }, (): number[] => []);
  /** Per post: acknowledgement times, when those likes were sent, when every like was sent. */
  const [acks, sends, offered] = [perPost(), perPost(), perPost()];
  /** Per post, likes that failed or went unanswered (they may or may not count). */
  const failed = Array.from({ length: LIVE_POSTS }, () => 0);
  records.forEach((r, i) => {
    const post = likes[i]!.post;
    offered[post]!.push(r.sentAt);
    if (!r.ok) failed[post]! += 1;
    else {
      acks[post]!.push(r.answeredAt);
      sends[post]!.push(r.sentAt);
    }
  });
  const latencies = sortUp(records.filter((r) => r.ok).map((r) => r.answeredAt - r.sentAt));
  const load = {
    sent: likes.length,
    acknowledged: latencies.length,
    failures: records.length - latencies.length,
    unanswered,
    rps: likes.length / Math.max(0.001, (lastSentAt - loop.startedAt) / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
  return { acks: acks.map(sortUp), sends: sends.map(sortUp), offered, failed, failures, load };
}

const sortUp = (a: number[]) => a.sort((x, y) => x - y);
const round1 = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(1)) : null);

/** Σ over posts of (flush intervals since `from` in which the post was liked) × (sockets watching it). */
export function pushesDue(likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number): number {
  return likedAt.reduce(
    (sum, times, post) => sum + new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!,
    0,
  );
}

type PhaseLikes = Pick<Awaited<ReturnType<typeof sendLikes>>, 'acks' | 'sends'> & { base: number[] };
type Seen = { at: number; count: number }[];

/** Latency over every (like, client watching its post) pair, from what each client saw of each post in arrival order. */
function latencyOf(r: PhaseLikes, seen: (readonly [post: number, observations: Seen])[]) {
  const lags = sortUp(seen.flatMap(([post, o]) => inclusionLags(r.acks[post]!, o, r.base[post]!)));
  const fromSent = sortUp(seen.flatMap(([post, o]) => inclusionLags(r.sends[post]!, o, r.base[post]!)));
  return {
    samples: lags.length,
    included: lags.filter(Number.isFinite).length,
    p50Ms: round1(percentile(lags, 50)),
    p99Ms: round1(percentile(lags, 99)),
    maxMs: round1(lags.at(-1) ?? Number.NaN),
    fromSentP50Ms: round1(percentile(fromSent, 50)),
    fromSentP99Ms: round1(percentile(fromSent, 99)),
  };
}

export type Report<C extends keyof LiveCommands> = Awaited<ReturnType<LiveCommands[C]>>;

/** Push latency of the timed sockets (their pushes flattened as [postId, likes, at]…). */
export function pushLatency(records: Report<'sockets'>['records'], postIndex: Map<number, number>, r: PhaseLikes) {
  const seen = records.flatMap((record) => {
    const byPost = new Map(record.postIds.map((id) => [postIndex.get(Number(id))!, [] as Seen]));
    for (let q = 0; q < record.pushes.length; q += 3) {
      byPost.get(postIndex.get(record.pushes[q]!)!)?.push({ count: record.pushes[q + 1]!, at: record.pushes[q + 2]! });
    }
    return [...byPost];
  });
  return latencyOf(r, seen);
}

/** Polling staleness over every poller, and the polls and changed counts answered in the window [from, to]. */
export function pollLatency(reports: Report<'stopPolling'>[], postIndex: Map<number, number>, r: PhaseLikes, from: number, to: number) {
  const inWindow = (t: number) => t >= from && t <= to;
  let [updates, requests] = [0, 0];
  const seen = reports
    .flatMap((x) => x.records)
    .flatMap((record) => {
      // Each poll: [sentAt, at, likes of each watched post].
      const size = 2 + WATCHED;
      const polls = Array.from({ length: record.polls.length / size }, (_, q) => record.polls.slice(q * size, (q + 1) * size));
      requests += polls.filter(([, at]) => inWindow(at!)).length;
      return record.postIds.map((id, j) => {
        const post = postIndex.get(Number(id))!;
        const seen = polls.map(([, at, ...likes]) => ({ at: at!, count: likes[j]! }));
        // An update: the post's likes differ from the poller's previous answer (or, first, from the count before).
        updates += seen.filter((o, q) => inWindow(o.at) && o.count !== (q === 0 ? r.base[post] : seen[q - 1]!.count)).length;
        return [post, seen] as const;
      });
    });
  return { latency: latencyOf(r, seen), updates, requests };
}

/** The likes of every post once unchanged for QUIET_MS, within `timeoutMs`. */
export function settledCounts(url: string, postIds: string[], timeoutMs = 60_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let [counts, failure]: [number[] | undefined, unknown] = [undefined, null];
  const read = async () => {
    try {
      const { data } = await gql<{ posts: { counts: { likes: number } }[] }>(url, POLL, { ids: postIds });
      counts = data.posts.map((p) => p.counts.likes);
      return counts;
    } catch (error) {
      failure = error; // retried: a read an overloaded API fails neither moves nor settles the counts
    }
  };
  const readOnce = () => waitFor('', read, deadline - Date.now());
  return waitForQuiet('', readOnce, QUIET_MS, timeoutMs).catch(() => {
    throw new Error(
      counts ? `the counts kept moving for ${timeoutMs} ms` : `the counts could not be read within ${timeoutMs} ms: ${String(failure)}`,
    );
  });
}
