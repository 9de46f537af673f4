// The live counts scenario's settings, likes and what it reads off its clients: the likes sent
// open loop and their acknowledgements per post, latency of pushes and polls, pushes due,
// settled counts.
import os from 'node:os';
import { intSetting } from '../lib/env.js';
import { inclusionLags, percentile } from '../lib/freshness.js';
import type { PollReport, SocketReport } from '../lib/liveClients.js';
import { gql } from '../lib/load.js';
import { startOpenLoop } from '../lib/openLoop.js';
import { idle, rssBytes } from '../lib/procStats.js';
import type { ServerHandle } from '../lib/servers.js';

export const LIVE_POSTS = 100;
/** Posts each socket or poller watches. */
export const WATCHED = 20;
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
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

/** Sockets whose every push is timed (a random sample, in a client process of their own). */
const SAMPLED_SOCKETS = 200;

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
    sampledSockets: Math.min(SAMPLED_SOCKETS, sockets),
  };
}

export type Cpu = {
  api: number;
  apiNet: number;
  worker: number;
  redis: number | null;
  generator: number;
  machine: number;
  steal: number;
  apiWaited: number;
};
export type Rss = Record<
  'beforeBytes' | 'withClientsBytes' | 'endBytes' | 'perClientBytes' | 'liveBeforeBytes' | 'liveWithClientsBytes' | 'livePerClientBytes',
  number
>;

export interface LivePhase {
  mode: 'likes only' | 'push' | 'poll';
  clients: number;
  windowS: number;
  likes: LikeLoad;
  cpu: Cpu;
  clientLoops: { name: string; utilization: number }[];
  updates: number;
  requests: number;
  latency: Latency | null;
  rss: Rss | null;
  exact: boolean;
  /** Counts off, sockets lost, unexpected messages: the run fails. */
  problems: string[];
  /** Likes or polls an overloaded API failed or left unanswered: measured, not a failure. */
  overload: string[];
}

/** Where the CPU went over a window, in cores. */
export function coresLine(cpu: Cpu, windowS: number): string {
  const c = (x: number | null) => (x === null ? '-' : (x / windowS).toFixed(2));
  return `cores: API ${c(cpu.api)} (its main thread waited for a core ${c(cpu.apiWaited)} of the time), worker ${c(cpu.worker)}, Redis ${c(cpu.redis)}, load generator ${c(cpu.generator)}, machine ${c(cpu.machine)} of ${os.cpus().length} (stolen ${c(cpu.steal)})`;
}

/** The API's memory before and with its clients: RSS, and V8 heap in use + memory outside it (buffers) after a full GC. */
export function apiMemory(api: ServerHandle) {
  /** The API's V8 heap in use and memory outside it (buffers), after a full collection. */
  const liveBytes = async () => {
    const m = await api.memory();
    if (!m.collected) throw new Error('the API was started without --expose-gc');
    return m.heapUsed + m.external;
  };
  const memoryBefore = async () => {
    await idle(api.pid);
    return { live: await liveBytes(), rss: rssBytes(api.pid) };
  };
  const memoryWith = async (before: { live: number; rss: number }, count: number): Promise<(endBytes: number) => Rss> => {
    const [live, rss] = [await liveBytes(), rssBytes(api.pid)];
    return (endBytes) => ({
      beforeBytes: before.rss,
      withClientsBytes: rss,
      endBytes,
      perClientBytes: (rss - before.rss) / count,
      liveBeforeBytes: before.live,
      liveWithClientsBytes: live,
      livePerClientBytes: (live - before.live) / count,
    });
  };
  return { liveBytes, memoryBefore, memoryWith };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round1 = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(1)) : null);

export interface Like {
  post: number;
  body: string;
  token: string;
}

/** The run's likes in order: `next(count)` gives the following `count`. */
export function likeSchedule(postIds: readonly string[], tokens: readonly string[]) {
  let nextLike = 0;
  return (count: number): Like[] => {
    if (nextLike + count > LIKERS * LIVE_POSTS) throw new Error(`at most ${LIKERS * LIVE_POSTS} likes per run`);
    return Array.from({ length: count }, () => {
      const j = nextLike++;
      const post = (j + Math.floor(j / LIKERS)) % LIVE_POSTS;
      const variables = { i: { postId: postIds[post], active: true } };
      return { post, token: tokens[j % LIKERS]!, body: JSON.stringify({ query: SET_LIKE, variables }) };
    });
  };
}

/** Sends `likes` at `rate` per second, open loop, and sorts their answers by post. */
export async function sendLikes(url: string, likes: Like[], rate: number) {
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
  const latencies = records.filter((r) => r.ok).map((r) => r.answeredAt - r.sentAt);
  latencies.sort((a, b) => a - b);
  const load = {
    sent: likes.length,
    acknowledged: latencies.length,
    failures: records.length - latencies.length,
    unanswered,
    rps: likes.length / Math.max(0.001, (lastSentAt - loop.startedAt) / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
  const sorted = (lists: number[][]) => lists.map((a) => a.sort((x, y) => x - y));
  return { acks: sorted(acks), sends: sorted(sends), offered, failed, failures, load };
}

export type LikeLoad = Awaited<ReturnType<typeof sendLikes>>['load'];

/** Σ over posts of (flush intervals since `from` in which the post was liked) × (sockets watching it). */
export function pushesDue(likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number): number {
  return likedAt.reduce(
    (sum, times, post) => sum + new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!,
    0,
  );
}

export function latencyOf(lags: number[], fromSent: number[]) {
  lags.sort((a, b) => a - b);
  fromSent.sort((a, b) => a - b);
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

export type Latency = ReturnType<typeof latencyOf>;

/** What a phase's likes looked like: acknowledgements and sends per post, and the counts before. */
interface PhaseLikes {
  acks: number[][];
  sends: number[][];
  base: number[];
}

/** Push latency of the timed sockets: each (like, socket watching its post) pair. */
export function pushLatency(records: SocketReport['records'], postIndex: Map<number, number>, r: PhaseLikes): Latency {
  const lags: number[] = [];
  const fromSent: number[] = [];
  for (const record of records) {
    const byPost = new Map<number, { at: number; count: number }[]>();
    for (let q = 0; q < record.pushes.length; q += 3) {
      const post = postIndex.get(record.pushes[q]!)!;
      byPost.set(post, [...(byPost.get(post) ?? []), { count: record.pushes[q + 1]!, at: record.pushes[q + 2]! }]);
    }
    for (const id of record.postIds) {
      const post = postIndex.get(Number(id))!;
      lags.push(...inclusionLags(r.acks[post]!, byPost.get(post) ?? [], r.base[post]!));
      fromSent.push(...inclusionLags(r.sends[post]!, byPost.get(post) ?? [], r.base[post]!));
    }
  }
  return latencyOf(lags, fromSent);
}

/** Polling staleness over every poller, and the requests and changed counts answered in the window [from, to]. */
export function pollLatency(reports: PollReport[], postIndex: Map<number, number>, r: PhaseLikes, from: number, to: number) {
  const lags: number[] = [];
  const fromSent: number[] = [];
  let updates = 0;
  let requests = 0;
  for (const record of reports.flatMap((x) => x.records)) {
    const posts = record.postIds.map((id) => postIndex.get(Number(id))!);
    const last = posts.map((post) => r.base[post]!);
    const seen = posts.map((): { at: number; count: number }[] => []);
    // Each poll: [sentAt, at, likes of each watched post].
    for (let q = 0; q < record.polls.length; q += 2 + WATCHED) {
      const at = record.polls[q + 1]!;
      const inWindow = at >= from && at <= to;
      if (inWindow) requests += 1;
      posts.forEach((_, j) => {
        const count = record.polls[q + 2 + j]!;
        seen[j]!.push({ at, count });
        if (count !== last[j]) {
          if (inWindow) updates += 1;
          last[j] = count;
        }
      });
    }
    posts.forEach((post, j) => {
      lags.push(...inclusionLags(r.acks[post]!, seen[j]!, r.base[post]!));
      fromSent.push(...inclusionLags(r.sends[post]!, seen[j]!, r.base[post]!));
    });
  }
  return { latency: latencyOf(lags, fromSent), updates, requests };
}

/** The likes of every post once they stop moving (unchanged over QUIET_MS), at most `timeoutMs`. */
export async function settledCounts(url: string, postIds: string[], timeoutMs = 60_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  let counts: number[] | null = null;
  let since = Date.now();
  let failure: unknown = null;
  while (Date.now() < deadline) {
    // A read an overloaded API fails is retried until the deadline.
    const next = await gql<{ posts: { counts: { likes: number } }[] }>(url, POLL, { ids: postIds }).then(
      ({ data }) => data.posts.map((p) => p.counts.likes),
      (error: unknown) => {
        failure = error;
        return null;
      },
    );
    if (next && (!counts || next.some((c, i) => c !== counts![i]))) {
      counts = next;
      since = Date.now();
    } else if (next && Date.now() - since >= QUIET_MS) return counts!;
    await sleep(250);
  }
  throw new Error(
    counts ? `the counts kept moving for ${timeoutMs} ms` : `the counts could not be read within ${timeoutMs} ms: ${String(failure)}`,
  );
}
