// The live counts scenario's measuring (likes sent open loop, settled counts, latency, sockets, memory), its table and ratios.
import { waitFor } from '../../test/support/wait.js';
import { inclusionLags, lagStats, percentile, sortUp, sum } from '../lib/freshness.js';
import type { LiveCommands } from '../lib/liveClientProcess.js';
import { changed, gql, type RequestRecord, startOpenLoop } from '../lib/load.js';
import { bucketPercentile, histogram, metric } from '../lib/metrics.js';
import type { cpuBetween } from '../lib/procStats.js';
import { columns, type Ratio, ratioLine, times } from '../lib/report.js';
import { waitForQuiet } from '../lib/servers.js';
import { LIVE_POSTS, type LiveResults, POLL, POLL_INTERVAL_MS, WATCHED } from './live.js';

export const [LIKE_CONNECTIONS, ANSWER_WAIT_MS, QUIET_MS] = [1024, 30_000, 2000];
const [LATENCY_P99_TARGET_MS, SOCKETS_TARGET] = [1000, 10_000];
const FAN_OUT_LAG = 'tally_live_fan_out_lag_seconds';

/** Likes sent open loop; per post, when the acknowledged ones were sent and answered, when each was sent, how many failed. */
export async function sendLikes(url: string, likes: { post: number; token: string; body: string }[], rate: number) {
  const [next, count] = [(i: number) => likes[i]!, likes.length];
  const loop = startOpenLoop({ url, perSecond: rate, next, isOk: changed, maxSockets: LIKE_CONNECTIONS, count });
  const lastSentAt = await loop.allSent;
  const { records, failures, unanswered } = await loop.stop(ANSWER_WAIT_MS);
  const byPost = Array.from({ length: LIVE_POSTS }, (): RequestRecord[] => []);
  for (const [i, r] of records.entries()) byPost[likes[i]!.post]!.push(r);
  const ok = byPost.map((sent) => sent.filter((r) => r.ok));
  const at = (lists: RequestRecord[][], key: 'sentAt' | 'answeredAt') => lists.map((list) => sortUp(list.map((r) => r[key])));
  const latencies = sortUp(records.filter((r) => r.ok).map((r) => r.answeredAt - r.sentAt));
  const load = {
    ...{ sent: likes.length, acknowledged: latencies.length, failures: records.length - latencies.length, unanswered },
    rps: likes.length / Math.max(0.001, (lastSentAt - loop.startedAt) / 1000),
    ...{ p50Ms: percentile(latencies, 50), p99Ms: percentile(latencies, 99) },
  };
  const failed = byPost.map((sent, post) => sent.length - ok[post]!.length);
  return { acks: at(ok, 'answeredAt'), sends: at(ok, 'sentAt'), offered: at(byPost, 'sentAt'), failed, failures, load };
}

/** The likes of every post once they stop moving; a read the API fails is retried (it neither moves nor settles them). */
export function settledCounts(url: string, postIds: string[], timeoutMs = 60_000): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  const read = () =>
    gql<{ posts: { counts: { likes: number } }[] }>(url, POLL, { ids: postIds }).then(
      ({ data }) => data.posts.map((x) => x.counts.likes),
      (error: Error) => error.message,
    );
  const readOnce = async () =>
    (await waitFor(read, Array.isArray, { timeoutMs: deadline - Date.now(), intervalMs: 250, what: 'the counts to be read' })) as number[];
  return waitForQuiet(readOnce, QUIET_MS, timeoutMs).catch((error: Error) => {
    throw new Error(`the counts did not settle within ${timeoutMs} ms: ${error.message.slice(0, 300)}`);
  });
}

type Report = Awaited<ReturnType<LiveCommands['report']>>;
type Liked = Awaited<ReturnType<typeof sendLikes>> & { base: number[] };

/** Each count must be its base + the likes acknowledged, + at most the likes that failed (they may have counted). */
export function countsOff(counts: number[] | Error, { base, acks, failed }: Liked, postIds: string[]): string[] {
  if (counts instanceof Error) return [counts.message];
  const off = counts.flatMap((c, i) => {
    const [least, most] = [base[i]! + acks[i]!.length, base[i]! + acks[i]!.length + failed[i]!];
    return c >= least && c <= most ? [] : [`post ${postIds[i]}: ${c}, expected ${least}${most > least ? ` to ${most}` : ''}`];
  });
  return off.length > 0 ? [`counts off: ${off.slice(0, 5).join('; ')}`] : [];
}

export function latencyOf({ acks, sends, base }: Liked, reports: Report[], postIndex: Map<number, number>) {
  const seen = reports
    .flatMap((x) => x.records)
    .flatMap(({ postIds, seen }) => {
      const byPost = new Map(postIds.map((id) => [postIndex.get(Number(id))!, [] as { at: number; count: number }[]]));
      for (let q = 0; q < seen.length; q += 3) byPost.get(postIndex.get(seen[q]!)!)?.push({ count: seen[q + 1]!, at: seen[q + 2]! });
      return [...byPost];
    });
  const lags = (at: number[][]) => seen.flatMap(([post, observed]) => inclusionLags(at[post]!, observed, base[post]!));
  const [fromAck, fromSent] = [lags(acks), lagStats(lags(sends))];
  return { samples: fromAck.length, ...lagStats(fromAck), fromSentP50Ms: fromSent.p50Ms, fromSentP99Ms: fromSent.p99Ms };
}

export const pushesDue = (likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number) =>
  sum(likedAt.map((times, post) => new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!));

type Opened = { subscribed: number; openSeconds: number };
export function socketTotals(reports: Report[], n: number, nothingLiked: (socket: number) => boolean, { subscribed, openSeconds }: Opened) {
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
  const counted = { opened, openAtEnd, silent: silent.length - nothingDue, nothingDue, errors, subscribedOnServer: subscribed };
  return { ...counted, closedByServer, openSeconds, problems };
}

/** What the API counted of its pushes between two readings of its /metrics. */
export function serverPushes(before: string | null, after: string | null) {
  const delta = (name: string) => metric(after, name) - metric(before, name);
  const fanOut = [histogram(before, FAN_OUT_LAG), histogram(after, FAN_OUT_LAG)] as const;
  return {
    ...{ serverPushes: delta('tally_live_pushes_total'), serverDropped: delta('tally_live_pushes_dropped_total') },
    ...{ serverFanOutP50Ms: bucketPercentile(...fanOut, 50), serverFanOutP99Ms: bucketPercentile(...fanOut, 99) },
  };
}

type Memory = { live: number; rss: number };
const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
export const memoryChange = (a: Memory, b: Memory) =>
  `API RSS ${mib(a.rss)} → ${mib(b.rss)} MiB, live heap + external ${mib(a.live)} → ${mib(b.live)} MiB (after a full GC)`;
export const memoryPerClient = (before: Memory, withClients: Memory, count: number, endBytes: number) => ({
  ...{ beforeBytes: before.rss, withClientsBytes: withClients.rss, endBytes, perClientBytes: (withClients.rss - before.rss) / count },
  ...{ liveBeforeBytes: before.live, liveWithClientsBytes: withClients.live, livePerClientBytes: (withClients.live - before.live) / count },
});

type Usage = { cpu: Omit<ReturnType<typeof cpuBetween>, 'windowS' | 'postgres'>; windowS: number; clientLoops: { utilization: number }[] };
/** Cores each process used in the window, and the client processes' event-loop utilisation. */
export function usage({ cpu, windowS, clientLoops }: Usage): string {
  const c = (x: number | null) => (x === null ? '-' : (x / windowS).toFixed(2));
  const loops = clientLoops.map((x) => x.utilization).join(', ');
  return `cores API ${c(cpu.api)}, worker ${c(cpu.worker)}, Redis ${c(cpu.redis)}, load generator ${c(cpu.generator)}, machine ${c(cpu.machine)} (stolen ${c(cpu.steal)}), the API's main thread waiting for a core ${c(cpu.apiWaited)} of the time; client event loops (1 = saturated) ${loops}`;
}

type LivePhase = LiveResults['phases'][number];
const msOrInfinity = (x: number) => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : '∞');
const ms = (x: number | null | undefined) => (x === undefined ? '-' : x === null ? '∞' : `${x.toFixed(0)}`);
const us = (seconds: number) => (Number.isFinite(seconds) ? `${(seconds * 1e6).toFixed(0)} µs` : '-');
const kib = (bytes: number) => `${(bytes / 1024).toFixed(1)} KiB`;
const cores = (x: number) => x.toFixed(3);
const pct = (x: number) => (Number.isFinite(x) ? `${(100 * x).toFixed(0)} %` : '-');
/** API CPU net of the likes, per count update, per request, per client and second. */
const netCpu = ({ cpu: { apiNet }, windowS, clients, updates, requests }: LivePhase) => {
  return { update: apiNet / updates, request: apiNet / requests, clientSecond: apiNet / (windowS * clients) };
};

export function liveRatios({ phases: [, push, poll], sockets: s, pollAtFullLoad }: LiveResults): Ratio[] {
  const [n, latency, pushRss, pushCpu, pollCpu] = [push.clients, push.latency!, push.rss!, netCpu(push), netCpu(poll)];
  const [perRequest, updatesPerRequest] = [pollAtFullLoad.cpuPerRequestS, poll.updates / poll.requests];
  const fullLoad = { clientSecond: perRequest * (1000 / POLL_INTERVAL_MS), update: perRequest / updatesPerRequest };
  const pushDue = (pushCpu.update * s.pushesDue) / (push.windowS * n);
  return [
    {
      ...{ label: `Live push latency p99, ${n} sockets`, value: latency.p99Ms ?? Number.POSITIVE_INFINITY, format: msOrInfinity },
      ...{ target: LATENCY_P99_TARGET_MS, atMost: true },
      detail: `like acknowledged -> a push including it, p50 ${ms(latency.p50Ms)} ms, max ${ms(latency.maxMs)} ms, ${latency.included}/${latency.samples} (like, timed socket) pairs seen; from the like sent: p50 ${ms(latency.fromSentP50Ms)} ms, p99 ${ms(latency.fromSentP99Ms)} ms (likes answered in p99 ${push.likes.p99Ms} ms); polling every 1 s: p50 ${ms(poll.latency!.p50Ms)} ms, p99 ${ms(poll.latency!.p99Ms)} ms`,
    },
    {
      ...{ label: 'Sockets on one API process, subscribed, open and receiving', target: SOCKETS_TARGET },
      ...{ value: Math.max(0, Math.min(s.subscribedOnServer, s.openAtEnd) - s.silent), format: (x: number) => x.toLocaleString('en-US') },
      detail: `${s.opened} opened in ${s.openSeconds.toFixed(1)} s, ${s.subscribedOnServer} subscriptions on the server, ${s.openAtEnd} open at the end, ${s.silent} never pushed to${s.nothingDue > 0 ? ` (and ${s.nothingDue} whose posts got no like, so no push was due)` : ''}, ${s.errors} unexpected messages; RSS ${kib(pushRss.perClientBytes)} per socket, live memory (heap + external after a full GC) ${kib(pushRss.livePerClientBytes)}`,
    },
    // Against the polling cost most favourable to polling: the lower of the measured and the full-load one.
    {
      ...{ label: 'Server CPU to keep every client current, push / polling every 1 s', target: 1, atMost: true },
      value: pushDue / Math.min(fullLoad.clientSecond, pollCpu.clientSecond),
      detail: `per client and second, net of the likes: push ≈ ${us(pushDue)} (${us(pushCpu.update)} per push × ${s.pushesDue} pushes due; the API delivered ${pct(s.pushesDelivered / s.pushesDue)} of them in the window, spending ${us(pushCpu.clientSecond)} per socket-second), polling ${us(fullLoad.clientSecond)} at the full-load CPU per request, ${us(pollCpu.clientSecond)} as measured with ${poll.clients} pollers; for ${n} clients ≈ ${cores(pushDue * n)} cores pushing vs ${cores(fullLoad.clientSecond * n)} (full-load cost) or ${cores(pollCpu.clientSecond * n)} (measured cost) cores polling, extrapolated`,
    },
    {
      ...{
        label: 'Server CPU per count update, push / polling every 1 s',
        value: pushCpu.update / Math.min(fullLoad.update, pollCpu.update),
      },
      detail: `push ${us(pushCpu.update)} per push (one post's counts to one socket); polling ${us(fullLoad.update)} per changed count at the full-load CPU per request, ${us(pollCpu.update)} as measured (${us(pollCpu.request)} per request answering ${Number.isFinite(updatesPerRequest) ? updatesPerRequest.toFixed(1) : '-'} changed counts of ${WATCHED})`,
    },
  ];
}

const HEADER = (
  'live counts|clients|p50 ms|p99 ms|p99 from sent|CPU/update|CPU/request|CPU/client·s|API cores|net of likes|' +
  'RSS/client (live)|updates/s|likes/s, p99|check'
).split('|');
const NAMES = { 'likes only': 'likes only (subtracted below)', push: 'push over WebSocket', poll: 'polling every 1 s' };

function phaseRow(x: LivePhase, more: string) {
  const [{ update, request, clientSecond }, { latency, likes, rss, problems }, perS] = [netCpu(x), x, (v: number) => v / x.windowS];
  const latencies = [ms(latency?.p50Ms), ms(latency?.p99Ms), ms(latency?.fromSentP99Ms)];
  const cpu = [us(update), us(request), us(clientSecond), cores(perS(x.cpu.api)), x.clients === 0 ? '-' : cores(perS(x.cpu.apiNet))];
  const memory = rss ? `${kib(rss.perClientBytes)} (${kib(rss.livePerClientBytes)})` : '-';
  const liked = `${likes.rps.toFixed(0)}, p99 ${likes.p99Ms} ms${likes.failures > 0 ? `, ${likes.failures} failed` : ''}`;
  const ok = likes.failures > 0 ? 'ok, every acknowledged like counted' : 'ok, counts exact';
  const check = `${problems.length > 0 ? `PROBLEMS: ${problems.length}` : ok}${x.overload.length > 0 ? ', OVERLOADED (below)' : ''}${more}`;
  return [NAMES[x.mode], String(x.clients), ...latencies, ...cpu, memory, perS(x.updates).toFixed(0), liked, check];
}

export function liveTable(results: LiveResults): string {
  const { phases, sockets: s, settings, pollAtFullLoad: full, method } = results;
  const [n, poll] = [settings.sockets, phases[2]];
  const sockets = `; ${s.openAtEnd}/${n} open, ${s.silent} silent; ${pct(s.pushesDelivered / s.pushesDue)} of pushes due delivered`;
  const rows = phases.map((x) => phaseRow(x, x.mode === 'push' ? sockets : ''));
  const listed = (title: string, pick: (x: LivePhase) => string[]) => {
    const lines = phases.flatMap((x) => pick(x).map((text) => `  ${x.mode}: ${text}`));
    return lines.length > 0 ? ['', title, ...lines] : [];
  };
  return [
    columns(HEADER, rows, (i) => i >= 1 && i <= 11),
    `${settings.likesPerS} likes/s on ${LIVE_POSTS} posts for ${settings.durationS} s per phase, each client watching ${WATCHED} posts; the method and columns: ${method}.`,
    `Push: ${s.pushesDelivered} of ${s.pushesDue} pushes due received; the API handed out ${s.serverPushes} and replaced ${s.serverDropped} by newer ones, fan-out lag p50 ≤ ${s.serverFanOutP50Ms} ms, p99 ≤ ${s.serverFanOutP99Ms} ms.`,
    `Poll: ${(poll.requests / poll.windowS).toFixed(0)} polls/s. The poll query at full load (no likes): ${full.rps.toFixed(0)} req/s from ${full.connections} connections, p99 ${full.p99Ms} ms, ${full.failures} failed, ${us(full.cpuPerRequestS)} of API CPU per request.`,
    `Polling every 1 s EXTRAPOLATED to ${n} clients (not measured, ${times(n / poll.clients)} the pollers): ${((poll.updates / poll.windowS) * (n / poll.clients)).toFixed(0)} updates/s; its CPU is in the ratios below.`,
    ...phases.map((x) => `${x.mode}: ${usage(x)}.`),
    ...listed('Problems (the run fails):', (x) => x.problems),
    ...listed('Overload (measured, not a failure of the run):', (x) => x.overload),
    '',
    ...liveRatios(results).map(ratioLine),
  ].join('\n');
}

export const livePassed = (results: LiveResults) => results.phases.every((x) => x.problems.length === 0);
