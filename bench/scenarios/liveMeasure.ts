// The live counts scenario's settings, client processes and measurements (docs/performance.md, "Live counts").
import { setTimeout as sleep } from 'node:timers/promises';
import { random, shuffled } from '../../prisma/random.js';
import { waitFor } from '../../test/support/wait.js';
import { entryOf, startChild } from '../lib/child.js';
import { intSetting } from '../lib/env.js';
import { inclusionLags, lagStats, percentile, sortUp, sum } from '../lib/freshness.js';
import { gql } from '../lib/httpPost.js';
import type { ClientSpec, LiveCommands } from '../lib/liveClientProcess.js';
import { likeBody } from '../lib/load.js';
import { metric, metricsText } from '../lib/metrics.js';
import { type RequestRecord, startOpenLoop } from '../lib/openLoop.js';
import { type cpuBetween, rssBytes } from '../lib/procStats.js';
import { range } from '../lib/seed.js';
import type { ServerHandle } from '../lib/servers.js';
import { waitForQuiet } from '../lib/waitFor.js';

export const [LIVE_POSTS, WATCHED] = [100, 20]; // posts, and posts each socket or poller watches
const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes favs asOf } } }';
const OPEN_BATCH = 500; // sockets opened per round, across the client processes
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
/** Connections the likes may take; answers abandoned this long after the last like; counts settled once quiet this long. */
export const [LIKE_CONNECTIONS, ANSWER_WAIT_MS, QUIET_MS] = [1024, 30_000, 2000];
/** Like j is user FIRST_LIKER + j % LIKERS on post (j + ⌊j / LIKERS⌋) % 100: a new (user, post) pair for j < 100 × LIKERS. */
export const [FIRST_LIKER, LIKERS] = [1000, 1000];

export type LiveSettings = ReturnType<typeof liveSettings>;

export function liveSettings() {
  const sockets = intSetting('BENCH_LIVE_SOCKETS', 10_000, 100_000);
  return {
    sockets,
    pollers: intSetting('BENCH_LIVE_POLLERS', 200, 100_000),
    likesPerS: intSetting('BENCH_LIVE_LIKES_PER_S', 200, 10_000),
    durationS: intSetting('BENCH_LIVE_DURATION_S', 30, 3600),
    clientProcesses: intSetting('BENCH_LIVE_CLIENT_PROCESSES', 2, 64),
    sampledSockets: Math.min(200, sockets), // timed sockets, in a client process of their own
  };
}

/** The API's RSS, and its V8 heap in use + memory outside it (buffers) after a full GC. */
async function apiMemory(api: ServerHandle) {
  const m = await api.memory();
  if (!m.collected) throw new Error('the API was started without --expose-gc');
  return { live: m.heapUsed + m.external, rss: rssBytes(api.pid) };
}

/** The API's memory before `connect` and with what it connected, settled for 3 s. */
export async function memoryAround(api: ServerHandle, connect: () => Promise<unknown>) {
  const before = await apiMemory(api);
  await connect();
  await sleep(3000);
  return { before, withClients: await apiMemory(api) };
}

type MemoryAround = Awaited<ReturnType<typeof memoryAround>>;
type Log = (line: string) => void;
export type PerClient = ReturnType<typeof memoryPerClient>;
/** RSS before, with `count` clients, at the phase's end and per client; the same of live memory. */
export const memoryPerClient = ({ before, withClients }: MemoryAround, count: number, endBytes: number) => ({
  ...{ beforeBytes: before.rss, withClientsBytes: withClients.rss, endBytes, perClientBytes: (withClients.rss - before.rss) / count },
  ...{ liveBeforeBytes: before.live, liveWithClientsBytes: withClients.live, livePerClientBytes: (withClients.live - before.live) / count },
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
  // Each post's likes; their acknowledgement times, when those were sent, when every like was sent, how many failed.
  const byPost = Array.from({ length: LIVE_POSTS }, (): RequestRecord[] => []);
  for (const [i, r] of records.entries()) byPost[likes[i]!.post]!.push(r);
  const ok = byPost.map((sent) => sent.filter((r) => r.ok));
  const times = (lists: RequestRecord[][], at: 'sentAt' | 'answeredAt') => lists.map((list) => sortUp(list.map((r) => r[at])));
  const failed = byPost.map((sent, post) => sent.length - ok[post]!.length);
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
  return { acks: times(ok, 'answeredAt'), sends: times(ok, 'sentAt'), offered: times(byPost, 'sentAt'), failed, failures, load };
}

/** Σ over posts of (flush intervals since `from` in which the post was liked) × (sockets watching it). */
export const pushesDue = (likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number) =>
  sum(likedAt.map((times, post) => new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!));

type PhaseLikes = Pick<Awaited<ReturnType<typeof sendLikes>>, 'acks' | 'sends'> & { base: number[] };
export type Report = Awaited<ReturnType<LiveCommands['report']>>;
export type Latency = ReturnType<typeof latencyOf>;

/** Latency over every (like, recording client watching its post) pair, from what each client saw of each post in arrival order. */
export function latencyOf(r: PhaseLikes, records: Report['records'], postIndex: Map<number, number>) {
  const seen = records.flatMap((record) => {
    const byPost = new Map(record.postIds.map((id) => [postIndex.get(Number(id))!, [] as { at: number; count: number }[]]));
    for (let q = 0; q < record.seen.length; q += 3) {
      byPost.get(postIndex.get(record.seen[q]!)!)?.push({ count: record.seen[q + 1]!, at: record.seen[q + 2]! });
    }
    return [...byPost];
  });
  const lags = seen.flatMap(([post, o]) => inclusionLags(r.acks[post]!, o, r.base[post]!));
  const fromSent = lagStats(seen.flatMap(([post, o]) => inclusionLags(r.sends[post]!, o, r.base[post]!)));
  return { samples: lags.length, ...lagStats(lags), fromSentP50Ms: fromSent.p50Ms, fromSentP99Ms: fromSent.p99Ms };
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
  const readOnce = async () => (await waitFor(read, Boolean, { timeoutMs: deadline - Date.now(), intervalMs: 250 }))!;
  return waitForQuiet(readOnce, QUIET_MS, timeoutMs).catch(() => {
    throw new Error(
      counts ? `the counts kept moving for ${timeoutMs} ms` : `the counts could not be read within ${timeoutMs} ms: ${String(failure)}`,
    );
  });
}

type Cpu = Omit<ReturnType<typeof cpuBetween>, 'windowS' | 'postgres'>;

/** The cores the other parts used over a window, as the log lines and the table's note print them. */
export function coresUsed(cpu: Cpu, windowS: number): string {
  const c = (x: number | null) => (x === null ? '-' : (x / windowS).toFixed(2));
  return `worker ${c(cpu.worker)}, Redis ${c(cpu.redis)}, load generator ${c(cpu.generator)}, machine ${c(cpu.machine)} (stolen ${c(cpu.steal)}); the API's main thread waited for a core ${c(cpu.apiWaited)} of the time`;
}

/** One load-generator process (bench/lib/liveClientProcess.ts); `openFiles`: one per socket or poller, and some. */
export async function startClients(name: string, openFiles: number) {
  const child = await startChild(`live clients ${name}`, process.execPath, entryOf('liveClientProcess'), {
    openFiles,
    readyWithinMs: 30_000,
  });
  type Answer<C extends keyof LiveCommands> = Awaited<ReturnType<LiveCommands[C]>>;
  const call = <C extends keyof LiveCommands>(cmd: C, ...args: Parameters<LiveCommands[C]>) => child.call<Answer<C>>(cmd, args[0]);
  return { name, pid: child.pid, call, stop: child.stop };
}
export type Clients = Awaited<ReturnType<typeof startClients>>;

/** Opens `n` sockets OPEN_BATCH at a time, `timed` of them (drawn at random) in the first process, recording every push. */
export async function openSockets(url: string, clients: Clients[], n: number, timed: number, watched: (i: number) => string[], log: Log) {
  const sampled = new Set(shuffled(range(0, n), random(15)).slice(0, timed));
  const [socket, started] = [{ kind: 'socket', url: `${url.replace(/^http/, 'ws')}/graphql`, query: WATCH } as const, Date.now()];
  for (let from = 0; from < n; from += OPEN_BATCH) {
    const lists = clients.map((): ClientSpec[] => []);
    for (let i = from; i < Math.min(n, from + OPEN_BATCH); i++)
      lists[sampled.has(i) ? 0 : 1 + (i % (clients.length - 1))]!.push({ index: i, postIds: watched(i) });
    await Promise.all(clients.map((c, k) => lists[k]!.length > 0 && c.call('open', { ...socket, clients: lists[k]!, record: k === 0 })));
    const opened = Math.min(n, from + OPEN_BATCH);
    if (opened % 2000 === 0 || opened === n) log(`  push: ${opened}/${n} sockets open`);
  }
  let subscribed = 0;
  const subscriptions = async () => (subscribed = metric(await metricsText(url), 'tally_live_subscriptions'));
  await waitFor(subscriptions, (count) => count >= n, { timeoutMs: 60_000, intervalMs: 250 }).catch(() => {
    throw new Error(`only ${subscribed} of ${n} subscriptions reached the server within 60 s`);
  });
  return { subscribed, openSeconds: (Date.now() - started) / 1000 };
}

/** The client processes' socket reports summed, and what went wrong (each fails the run). */
export function socketTotals(reports: Report[], n: number, nothingLiked: (socket: number) => boolean) {
  const total = (f: (x: Report) => number) => sum(reports.map(f));
  const [opened, openAtEnd, errors] = [total((x) => x.clients), total((x) => x.open), total((x) => x.errors)];
  const silent = reports.flatMap((x) => x.silent);
  const nothingDue = silent.filter(nothingLiked).length; // silent sockets none of whose posts was liked had no push due
  const closedByServer: Record<string, number> = {};
  for (const [code, count] of reports.flatMap((x) => Object.entries(x.closes))) closedByServer[code] = (closedByServer[code] ?? 0) + count;
  const problems = [
    opened !== n && `${opened} of ${n} sockets opened`,
    openAtEnd !== n && `${n - openAtEnd} sockets closed: ${JSON.stringify(closedByServer)}`,
    silent.length > nothingDue && `${silent.length - nothingDue} sockets received no push`,
    errors > 0 && `${errors} unexpected messages`,
    ...reports.flatMap((r) => r.unexpected.slice(0, 3)),
  ].filter((x) => x !== false);
  return { totals: { opened, openAtEnd, silent: silent.length - nothingDue, nothingDue, errors }, closedByServer, problems };
}
