// The live counts scenario's measurements (likes and their answers, counts, latency, pushes due, sockets, memory) and its table.
import { waitFor } from '../../test/support/wait.js';
import { inclusionLags, lagStats, percentile, sortUp, sum } from '../lib/freshness.js';
import type { LiveCommands } from '../lib/liveClientProcess.js';
import { changed, gql, type RequestRecord, startOpenLoop } from '../lib/load.js';
import type { cpuBetween } from '../lib/procStats.js';
import { columns, type Ratio, ratioLine, times } from '../lib/report.js';
import { waitForQuiet } from '../lib/servers.js';
import { LIVE_POSTS, type LiveResults, POLL, POLL_INTERVAL_MS, WATCHED } from './live.js';

export const [LIKE_CONNECTIONS, ANSWER_WAIT_MS, QUIET_MS] = [1024, 30_000, 2000];
const [LATENCY_P99_TARGET_MS, SOCKETS_TARGET] = [1000, 10_000];

export async function sendLikes(url: string, likes: { post: number; token: string; body: string }[], rate: number) {
  const next = (i: number) => likes[i]!;
  const loop = startOpenLoop({ url, perSecond: rate, next, isOk: changed, maxSockets: LIKE_CONNECTIONS, count: likes.length });
  const lastSentAt = await loop.allSent;
  const { records, failures, unanswered } = await loop.stop(ANSWER_WAIT_MS);
  const byPost = Array.from({ length: LIVE_POSTS }, (): RequestRecord[] => []);
  for (const [i, r] of records.entries()) byPost[likes[i]!.post]!.push(r);
  const ok = byPost.map((sent) => sent.filter((r) => r.ok));
  const times = (lists: RequestRecord[][], at: 'sentAt' | 'answeredAt') => lists.map((list) => sortUp(list.map((r) => r[at])));
  const latencies = sortUp(records.filter((r) => r.ok).map((r) => r.answeredAt - r.sentAt));
  const load = {
    ...{ sent: likes.length, acknowledged: latencies.length, failures: records.length - latencies.length, unanswered },
    rps: likes.length / Math.max(0.001, (lastSentAt - loop.startedAt) / 1000),
    ...{ p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) },
  };
  const failed = byPost.map((sent, post) => sent.length - ok[post]!.length);
  return { acks: times(ok, 'answeredAt'), sends: times(ok, 'sentAt'), offered: times(byPost, 'sentAt'), failed, failures, load };
}

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
    const why = counts ? 'the counts kept moving' : `the counts could not be read within ${timeoutMs} ms: ${failure}`;
    throw new Error(counts ? `${why} for ${timeoutMs} ms` : why);
  });
}

export const pushesDue = (likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number) =>
  sum(likedAt.map((times, post) => new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!));

type Report = Awaited<ReturnType<LiveCommands['report']>>;

type Liked = { acks: number[][]; sends: number[][]; base: number[] };
export function latencyOf(r: Liked, reports: Report[], postIndex: Map<number, number>) {
  const seen = reports
    .flatMap((x) => x.records)
    .flatMap((record) => {
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

type Memory = { live: number; rss: number };
export type MemoryAround = { before: Memory; withClients: Memory };
export type PerClient = ReturnType<typeof memoryPerClient>;
export const memoryPerClient = ({ before, withClients }: MemoryAround, count: number, endBytes: number) => ({
  ...{ beforeBytes: before.rss, withClientsBytes: withClients.rss, endBytes, perClientBytes: (withClients.rss - before.rss) / count },
  ...{ liveBeforeBytes: before.live, liveWithClientsBytes: withClients.live, livePerClientBytes: (withClients.live - before.live) / count },
});

type Cpu = Omit<ReturnType<typeof cpuBetween>, 'windowS' | 'postgres'>;

export function coresUsed(cpu: Cpu, windowS: number): string {
  const c = (x: number | null) => (x === null ? '-' : (x / windowS).toFixed(2));
  return `worker ${c(cpu.worker)}, Redis ${c(cpu.redis)}, load generator ${c(cpu.generator)}, machine ${c(cpu.machine)} (stolen ${c(cpu.steal)}); the API's main thread waited for a core ${c(cpu.apiWaited)} of the time`;
}

type LivePhase = LiveResults['phases'][number];

const msOrInfinity = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '∞');
const ms = (x: number | null | undefined) => (x === undefined ? '-' : x === null ? '∞' : `${x.toFixed(0)}`);
const us = (seconds: number) => (Number.isFinite(seconds) ? `${(seconds * 1e6).toFixed(0)} µs` : '-');
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const cores = (x: number) => x.toFixed(3);
const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)} %` : '-');
const memoryCell = (rss: NonNullable<LivePhase['rss']>) => `${kib(rss.perClientBytes)} (${kib(rss.livePerClientBytes)})`;
const netCpu = ({ cpu: { apiNet }, windowS, clients, updates, requests }: LivePhase) => {
  return { clientSecond: apiNet / (windowS * clients), update: apiNet / updates, request: apiNet / requests };
};

function figures({ phases: [likes, push, poll], sockets: s, pollAtFullLoad }: LiveResults) {
  const [pushCpu, pollCpu] = [netCpu(push), netCpu(poll)];
  const updatesPerRequest = poll.updates / poll.requests;
  const perRequest = pollAtFullLoad.cpuPerRequestS;
  const fullLoad = { clientSecond: perRequest * (1000 / POLL_INTERVAL_MS), update: perRequest / updatesPerRequest };
  const pushDue = (pushCpu.update * s.pushesDue) / (push.windowS * push.clients);
  const measured = { latency: push.latency!, pollLatency: poll.latency!, pushRss: push.rss!, pollRss: poll.rss! }; // the phases with clients
  return { likes, push, poll, s, n: push.clients, pushCpu, pollCpu, fullLoad, pushDue, updatesPerRequest, ...measured };
}

export function liveRatios(results: LiveResults): Ratio[] {
  const { push, poll, s, n, pushCpu, pollCpu, fullLoad, pushDue, updatesPerRequest, latency, pollLatency, pushRss } = figures(results);
  return [
    {
      ...{ label: `Live push latency p99, ${n} sockets`, value: latency.p99Ms ?? Number.POSITIVE_INFINITY, format: msOrInfinity },
      ...{ target: LATENCY_P99_TARGET_MS, atMost: true },
      detail: `like acknowledged -> a push including it, p50 ${ms(latency.p50Ms)} ms, max ${ms(latency.maxMs)} ms, ${latency.included}/${latency.samples} (like, timed socket) pairs seen; from the like sent: p50 ${ms(latency.fromSentP50Ms)} ms, p99 ${ms(latency.fromSentP99Ms)} ms (likes answered in p99 ${push.likes.p99Ms} ms); polling every 1 s: p50 ${ms(pollLatency.p50Ms)} ms, p99 ${ms(pollLatency.p99Ms)} ms`,
    },
    {
      label: 'Sockets on one API process, subscribed, open and receiving',
      value: Math.max(0, Math.min(s.subscribedOnServer, s.openAtEnd) - s.silent),
      format: (x) => x.toLocaleString('en-US'),
      target: SOCKETS_TARGET,
      detail: `${s.opened} opened in ${s.openSeconds.toFixed(1)} s, ${s.subscribedOnServer} subscriptions on the server, ${s.openAtEnd} open at the end, ${s.silent} never pushed to${s.nothingDue > 0 ? ` (and ${s.nothingDue} whose posts got no like, so no push was due)` : ''}, ${s.errors} unexpected messages; RSS ${kib(pushRss.perClientBytes)} per socket, live memory (heap + external after a full GC) ${kib(pushRss.livePerClientBytes)}`,
    },
    // Against the polling cost most favourable to polling: the lower of the measured and the full-load one.
    {
      ...{ label: 'Server CPU to keep every client current, push / polling every 1 s', target: 1, atMost: true },
      value: pushDue / Math.min(fullLoad.clientSecond, pollCpu.clientSecond),
      detail: `per client and second, net of the likes: push ≈ ${us(pushDue)} (${us(pushCpu.update)} per push × ${s.pushesDue} pushes due; the API delivered ${pct(s.pushesDelivered / s.pushesDue)} of them in the window, spending ${us(pushCpu.clientSecond)} per socket-second), polling ${us(fullLoad.clientSecond)} at the full-load CPU per request, ${us(pollCpu.clientSecond)} as measured with ${poll.clients} pollers; for ${n} clients ≈ ${cores(pushDue * n)} cores pushing vs ${cores(fullLoad.clientSecond * n)} (full-load cost) or ${cores(pollCpu.clientSecond * n)} (measured cost) cores polling, extrapolated`,
    },
    {
      label: 'Server CPU per count update, push / polling every 1 s',
      value: pushCpu.update / Math.min(fullLoad.update, pollCpu.update),
      detail: `push ${us(pushCpu.update)} per push (one post's counts to one socket); polling ${us(fullLoad.update)} per changed count at the full-load CPU per request, ${us(pollCpu.update)} as measured (${us(pollCpu.request)} per request answering ${Number.isFinite(updatesPerRequest) ? updatesPerRequest.toFixed(1) : '-'} changed counts of ${WATCHED})`,
    },
  ];
}

const HEADER = (
  'live counts|clients|p50 ms|p99 ms|p99 from sent|CPU/update|CPU/request|CPU/client·s|API cores|net of likes|' +
  'RSS/client (live)|updates/s|likes/s, p99|check'
).split('|');
const row = (cells: Record<string, string>) => HEADER.map((h) => cells[h] ?? '-');

const check = (x: LivePhase) =>
  (x.problems.length > 0 || !x.exact
    ? `PROBLEMS: ${x.problems.length}`
    : x.likes.failures > 0
      ? 'ok, every acknowledged like counted'
      : 'ok, counts exact') + (x.overload.length > 0 ? ', OVERLOADED (below)' : '');

const phaseRow = (name: string, x: LivePhase, cells: Record<string, string> = {}) =>
  row({
    'live counts': name,
    clients: String(x.clients),
    'p50 ms': ms(x.latency?.p50Ms),
    'p99 ms': ms(x.latency?.p99Ms),
    'p99 from sent': ms(x.latency?.fromSentP99Ms),
    'CPU/update': us(netCpu(x).update),
    'CPU/client·s': us(netCpu(x).clientSecond),
    'API cores': cores(x.cpu.api / x.windowS),
    'net of likes': x.mode === 'likes only' ? '-' : cores(x.cpu.apiNet / x.windowS),
    'RSS/client (live)': x.rss ? memoryCell(x.rss) : '-',
    'updates/s': (x.updates / x.windowS).toFixed(0),
    'likes/s, p99': `${x.likes.rps.toFixed(0)}, p99 ${x.likes.p99Ms} ms${x.likes.failures > 0 ? `, ${x.likes.failures} failed` : ''}`,
    check: check(x),
    ...cells,
  });

export function liveTable(results: LiveResults): string {
  const { likes, push, poll, s, n, pollCpu, fullLoad, pollRss } = figures(results);
  const { pollAtFullLoad: full, settings } = results;
  const atFullLoad = { 'CPU/update': us(fullLoad.update), 'CPU/request': us(full.cpuPerRequestS) };
  const rows = [
    phaseRow('likes only (subtracted below)', likes),
    phaseRow('push over WebSocket', push, {
      check: `${check(push)}; ${s.openAtEnd}/${n} open, ${s.silent} silent; ${pct(s.pushesDelivered / s.pushesDue)} of pushes due delivered`,
    }),
    phaseRow('polling every 1 s', poll, { 'CPU/request': us(pollCpu.request) }),
    row({
      'live counts': 'poll query at full load, no likes',
      ...atFullLoad,
      check: `${full.rps.toFixed(0)} req/s from ${full.connections} connections, p99 ${full.p99Ms} ms, ${full.failures} failed`,
    }),
    row({
      'live counts': `polling every 1 s, EXTRAPOLATED to ${n}`,
      clients: String(n),
      ...atFullLoad,
      'CPU/client·s': us(fullLoad.clientSecond),
      'net of likes': cores(fullLoad.clientSecond * n),
      'RSS/client (live)': memoryCell(pollRss),
      'updates/s': ((poll.updates / poll.windowS) * (n / poll.clients)).toFixed(0),
      check: `not measured: ${n} req/s is beyond this machine; at the full-load CPU/request (${cores(pollCpu.clientSecond * n)} cores at the measured one)`,
    }),
  ];
  const note =
    `${settings.likesPerS} likes/s on ${LIVE_POSTS} posts for ${settings.durationS} s per phase, each client watching ${WATCHED} posts. ` +
    'Latency p50/p99 = like acknowledged -> the client sees it (push, or the answer of a poll); "from sent" from the like sent. ' +
    'CPU = the API process from the first like sent to the last answered; "net" = minus the likes-only CPU per like × likes ' +
    '(CPU/update, CPU/request and CPU/client·s are net; API cores near 1 = saturated). RSS/client = API RSS with the clients ' +
    'connected minus before, per client, after a full GC (live: V8 heap used + external). ' +
    `${times(n / poll.clients)} the pollers would be needed for ${n} clients. Cores used, push: ${coresUsed(push.cpu, push.windowS)}; poll: ${coresUsed(poll.cpu, poll.windowS)}. ` +
    `Load generator event loops (1 = saturated): push ${push.clientLoops.map((x) => x.utilization).join(', ')}; poll ${poll.clientLoops.map((x) => x.utilization).join(', ')}.`;
  const listed = (title: string, pick: (x: LivePhase) => string[]) => {
    const lines = results.phases.flatMap((x) => pick(x).map((text) => `  ${x.mode}: ${text}`));
    return lines.length > 0 ? ['', title, ...lines] : [];
  };
  return [
    columns(HEADER, rows, (i) => i >= 1 && i <= 11),
    note,
    ...listed('Problems (the run fails):', (x) => x.problems),
    ...listed('Overload (measured, not a failure of the run):', (x) => x.overload),
    '',
    ...liveRatios(results).map(ratioLine),
  ].join('\n');
}

export const livePassed = (results: LiveResults) => !results.phases.some((x) => x.problems.length > 0 || !x.exact);
