// Scenario "live counts" (docs/performance.md, "Live counts"): one loop of likes and what the clients saw of them, run
// with no clients, with sockets, with pollers.
import { performance } from 'node:perf_hooks';
import { loadConfig } from '../../src/config.js';
import { waitFor } from '../../test/support/wait.js';
import { type BenchEnv, tallyEnv } from '../lib/env.js';
import { sum } from '../lib/freshness.js';
import { firstSight, runLoad } from '../lib/load.js';
import { bucketPercentile, histogram, metric, metricsText } from '../lib/metrics.js';
import { cpuBetween, cpuSeconds, idle, openFilesLimit, readCpu, rssBytes } from '../lib/procStats.js';
import { openSeeder, range } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';
import { waitForQuiet } from '../lib/waitFor.js';
import * as m from './liveMeasure.js';

export { LIVE_POSTS, liveSettings, WATCHED } from './liveMeasure.js';
export const POLL_INTERVAL_MS = 1000;
const [WARMUP_S, FULL_LOAD_CONNECTIONS, FULL_LOAD_S, WATCH_AFTER_MS] = [3, 16, 5, 30_000];
const FAN_OUT_LAG = 'tally_live_fan_out_lag_seconds';

export type LiveResults = Awaited<ReturnType<typeof runLiveScenario>>;

/** LIVE_POSTS posts by 10 authors, and the likers' tokens. */
async function seedPosts(serverEnv: Record<string, string>) {
  const seeder = await openSeeder(serverEnv);
  try {
    await seeder.addUsers(range(1, 10), 'Author');
    const postIds: string[] = [];
    for (let i = 0; i < m.LIVE_POSTS; i++) postIds.push(String((await seeder.post(1 + (i % 10), `live post ${i}`)).id));
    const likers = range(m.FIRST_LIKER, m.LIKERS);
    const tokens = await seeder.tokens(likers);
    return { postIds, tokens: likers.map((id) => tokens.get(id)!) };
  } finally {
    await seeder.close();
  }
}

export async function runLiveScenario(opts: { env: BenchEnv; settings: m.LiveSettings; log: (line: string) => void }) {
  const { settings, log } = opts;
  const { sockets: n, pollers: p, likesPerS: rate, durationS } = settings;
  // Every socket comes from 127.0.0.1, and each counts as a connection of the HTTP server.
  const serverEnv = { ...tallyEnv(opts.env), WS_MAX_CONNECTIONS_PER_CLIENT: '100000', HTTP_MAX_CONNECTIONS: '1000000' };
  const openFiles = openFilesLimit();
  const { postIds, tokens } = await seedPosts(serverEnv);
  const postIndex = new Map(postIds.map((id, i) => [Number(id), i]));
  const watched = (i: number) => Array.from({ length: m.WATCHED }, (_, k) => postIds[(i + k) % m.LIVE_POSTS]!);
  const watchers = Array.from({ length: m.LIVE_POSTS }, () => 0); // sockets watching each post
  for (let i = 0; i < n; i++) for (let k = 0; k < m.WATCHED; k++) watchers[(i + k) % m.LIVE_POSTS]! += 1;
  const { flushIntervalMs } = loadConfig(serverEnv);
  const likesFor = m.likeSchedule(postIds, tokens);
  const clients: m.Clients[] = [];
  // --expose-gc: the bench collects garbage before it reads the API's live memory.
  const deployment = await startDeployment(serverEnv, n + p + m.LIKE_CONNECTIONS + 1024, ['--expose-gc']);
  const { api } = deployment;
  try {
    clients.push(await m.startClients('timed sockets', settings.sampledSockets + 256));
    for (let k = 0; k < settings.clientProcesses; k++) {
      clients.push(await m.startClients(`clients ${k + 1}`, Math.ceil(Math.max(n, p) / settings.clientProcesses) + 256));
    }
    const bulk = clients.slice(1);
    const pids = { ...deployment.pids, clients: clients.map((c) => c.pid) };
    let likesOnlyApiCpuPerLike = 0;
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return m.settledCounts(api.url, postIds);
    };
    /** The loop of every phase: a phase's likes while `processes` hold its clients (CPU and their marks from the first like sent to the last answered), then what the clients saw. */
    const likePhase = async (base: number[], processes: m.Clients[], watching = true) => {
      const likes = likesFor(Math.round(rate * durationS));
      const marks = () => Promise.all(processes.map((c) => c.call('mark')));
      const before = { marks: await marks(), cpu: readCpu(pids) };
      const sent = await m.sendLikes(api.url, likes, rate);
      const after = { marks: await marks(), cpu: readCpu(pids) };
      const { windowS, postgres: _, ...used } = cpuBetween(before.cpu, after.cpu);
      const cpu = { ...used, apiNet: used.api - likesOnlyApiCpuPerLike * sent.load.acknowledged };
      const clientLoops = processes.map((c, i) => {
        const { utilization } = performance.eventLoopUtilization(after.marks[i]!.loop, before.marks[i]!.loop);
        return { name: c.name, utilization: Number(utilization.toFixed(3)) };
      });
      const rssEnd = rssBytes(api.pid);
      // An update: a push, or a post whose likes differ from the poller's previous answer; requests: polls answered.
      const total = (x: Awaited<ReturnType<typeof marks>>, key: 'updates' | 'answers') => sum(x.map((y) => y[key]));
      if (watching) await waitForQuiet(async () => total(await marks(), 'updates'), m.QUIET_MS, WATCH_AFTER_MS).catch(() => {});
      const reports = await Promise.all(processes.map((c) => c.call('report')));
      const r = { ...sent, base, windowS, from: before.cpu.at, cpu, clientLoops, rssEnd, reports };
      const updates = total(after.marks, 'updates') - total(before.marks, 'updates');
      const requests = total(after.marks, 'answers') - total(before.marks, 'answers');
      const latency = watching
        ? m.latencyOf(
            r,
            reports.flatMap((x) => x.records),
            postIndex,
          )
        : null;
      return { ...r, measured: { updates, requests, latency } };
    };
    type LikeRun = Awaited<ReturnType<typeof likePhase>>;
    /** Each count must be its base + the likes acknowledged, + at most the likes that failed (they may have counted). */
    const countsOff = async (r: LikeRun) =>
      (await m.settledCounts(api.url, postIds)).flatMap((c, i) => {
        const least = r.base[i]! + r.acks[i]!.length;
        const most = least + r.failed[i]!;
        return c >= least && c <= most ? [] : [`post ${postIds[i]}: ${c}, expected ${least}${most > least ? ` to ${most}` : ''}`];
      });
    /** A phase's record, its counts checked, and its progress line; `problems` fail the run, `overload` is measured. */
    const phase = async (
      mode: 'likes only' | 'push' | 'poll',
      r: LikeRun,
      clientCount: number,
      {
        seen,
        rss = null,
        problems = [],
        overload = [],
      }: { seen: string; rss?: m.PerClient | null; problems?: string[]; overload?: string[] },
    ) => {
      const cores = `API ${(r.cpu.api / r.windowS).toFixed(2)}, ${m.coresUsed(r.cpu, r.windowS)}`;
      const loops = r.clientLoops.map((c) => c.utilization).join(', ');
      log(`  ${mode}: ${seen}; likes ${r.load.rps.toFixed(0)}/s, p99 ${r.load.p99Ms} ms; cores ${cores}; client loops ${loops}`);
      const likesFailed = `${r.load.failures} likes failed (${r.load.unanswered} of them unanswered ${m.ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${r.failures[0]}`;
      const counts = await countsOff(r).then(
        (off) => ({ exact: off.length === 0, problems: off.length > 0 ? [`counts off: ${off.slice(0, 5).join('; ')}`] : [] }),
        (error: Error) => ({ exact: false, problems: [error.message] }),
      );
      const { windowS, load: likes, cpu, measured, clientLoops } = r;
      return {
        ...{ mode, clients: clientCount, windowS, likes, cpu, ...measured, rss, clientLoops, exact: counts.exact },
        problems: [...counts.problems, ...problems],
        overload: [...(r.load.failures > 0 ? [likesFailed] : []), ...overload],
      };
    };
    await firstSight(api.url, tokens);
    log(`  warm-up: ${m.LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await m.sendLikes(api.url, likesFor(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);
    const likesOnly = async () => {
      const r = await likePhase(await baseCounts(), clients, false);
      likesOnlyApiCpuPerLike = r.cpu.api / Math.max(1, r.load.acknowledged);
      r.cpu.apiNet = 0;
      return phase('likes only', r, 0, { seen: 'no clients' });
    };
    const pushPhase = async () => {
      const base = await baseCounts();
      let opened = { subscribed: 0, openSeconds: 0 };
      const memory = await m.memoryAround(api, async () => {
        opened = await m.openSockets(api.url, clients, n, settings.sampledSockets, watched, log);
      });
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
      const [a, b] = [memory.before, memory.withClients];
      log(
        `  push: ${n} sockets subscribed in ${opened.openSeconds.toFixed(1)} s; API RSS ${mib(a.rss)} → ${mib(b.rss)} MiB, live heap + external ${mib(a.live)} → ${mib(b.live)} MiB (after a full GC)`,
      );
      await idle(api.pid);
      const metricsBefore = await metricsText(api.url);
      const r = await likePhase(base, clients);
      const { updates, latency } = r.measured;
      const metricsAfter = await metricsText(api.url);
      const delta = (name: string) => metric(metricsAfter, name) - metric(metricsBefore, name);
      const fanOut = [histogram(metricsBefore, FAN_OUT_LAG), histogram(metricsAfter, FAN_OUT_LAG)] as const;
      const nothingLiked = (i: number) => watched(i).every((id) => r.acks[postIndex.get(Number(id))!]!.length === 0);
      const { totals, closedByServer, problems } = m.socketTotals(r.reports, n, nothingLiked);
      const sockets = {
        ...{ ...totals, subscribedOnServer: opened.subscribed, closedByServer, openSeconds: opened.openSeconds },
        ...{ serverPushes: delta('tally_live_pushes_total'), serverDropped: delta('tally_live_pushes_dropped_total') },
        ...{ serverFanOutP50Ms: bucketPercentile(...fanOut, 50), serverFanOutP99Ms: bucketPercentile(...fanOut, 99) },
        ...{ pushesDue: m.pushesDue(r.offered, watchers, r.from, flushIntervalMs), pushesDelivered: updates },
      };
      // Sockets closed (at most 30 s) and the API idle before the counts are checked.
      const closed = sum(await Promise.all(clients.map((c) => c.call('closeAll'))));
      const open = async () => metric(await metricsText(api.url), 'tally_live_sockets');
      await waitFor(open, (count) => count === 0, { timeoutMs: 30_000, intervalMs: 250 }).catch(() => {});
      log(`  push: ${closed} sockets closed`);
      await idle(api.pid);
      const seen =
        `${(updates / r.windowS).toFixed(0)} pushes/s to ${n} sockets (${sockets.pushesDue} due in the window, ${updates} received; server: ${sockets.serverPushes} handed out, ${sockets.serverDropped} replaced by newer, fan-out p50 ≤ ${sockets.serverFanOutP50Ms} ms, p99 ≤ ${sockets.serverFanOutP99Ms} ms); ` +
        `latency p50 ${latency!.p50Ms} ms, p99 ${latency!.p99Ms} ms (${latency!.included}/${latency!.samples} seen)`;
      const rss = m.memoryPerClient(memory, n, r.rssEnd);
      return { sockets, phase: await phase('push', r, n, { seen, rss, problems }) };
    };
    const pollPhase = async () => {
      const base = await baseCounts();
      const pollers = (j: number) => range(0, p).flatMap((i) => (i % bulk.length === j ? [{ index: i, postIds: watched(i) }] : []));
      const start = { kind: 'poller', url: api.url, query: m.POLL, record: true, intervalMs: POLL_INTERVAL_MS } as const;
      const memory = await m.memoryAround(api, () => Promise.all(bulk.map((c, j) => c.call('open', { ...start, clients: pollers(j) }))));
      const r = await likePhase(base, bulk);
      await Promise.all(bulk.map((c) => c.call('closeAll')));
      const { requests, latency } = r.measured;
      const failures = sum(r.reports.map((x) => x.failures));
      const overload = failures > 0 ? [`${failures} polls failed`, ...r.reports.flatMap((x) => x.unexpected.slice(0, 3))] : [];
      const seen = `${(requests / r.windowS).toFixed(0)} polls/s from ${p} pollers; staleness p50 ${latency!.p50Ms} ms, p99 ${latency!.p99Ms} ms`;
      return phase('poll', r, p, { seen, rss: m.memoryPerClient(memory, p, r.rssEnd), overload });
    };
    const likesAlone = await likesOnly();
    const { sockets, phase: push } = await pushPhase();
    const poll = await pollPhase();
    await baseCounts();
    const body = JSON.stringify({ query: m.POLL, variables: { ids: watched(0) } });
    await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: 2, body });
    const cpu0 = cpuSeconds(api.pid);
    const full = await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: FULL_LOAD_S, body });
    const cpuPerRequestS = (cpuSeconds(api.pid) - cpu0) / Math.max(1, full.requests);
    const { rps, p99Ms, failures } = full;
    const pollAtFullLoad = { connections: FULL_LOAD_CONNECTIONS, rps, p99Ms, failures, cpuPerRequestS };
    if (full.failures > 0) poll.problems.push(`${full.failures} poll queries failed at full load`);
    log(
      `  poll query at full load (${FULL_LOAD_CONNECTIONS} connections, no likes): ${full.rps.toFixed(0)} req/s, ${(cpuPerRequestS * 1e6).toFixed(0)} µs of API CPU per request`,
    );
    const phases = [likesAlone, push, poll] as const;
    return { settings, openFiles, phases, sockets, pollAtFullLoad, method: 'docs/performance.md#live-counts' };
  } finally {
    for (const c of clients) await c.stop(); // sockets first, then the servers
    await deployment.stop();
  }
}
