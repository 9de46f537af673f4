// Scenario "live counts" (docs/performance.md, "Live counts").
import { setTimeout as sleep } from 'node:timers/promises';
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
    const marks = () => Promise.all(clients.map((c) => c.call('mark')));
    const snapshot = async () => ({ marks: await marks(), cpu: readCpu(pids) });
    let likesOnlyApiCpuPerLike = 0;
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return m.settledCounts(api.url, postIds);
    };
    /** One phase's likes; CPU and client marks from the first like sent to the last answered. */
    const likePhase = async (base: number[]) => {
      const likes = likesFor(Math.round(rate * durationS));
      const before = await snapshot();
      const sent = await m.sendLikes(api.url, likes, rate);
      const after = await snapshot();
      const { windowS, postgres: _, ...used } = cpuBetween(before.cpu, after.cpu);
      const cpu = { ...used, apiNet: used.api - likesOnlyApiCpuPerLike * sent.load.acknowledged };
      const clientLoops = clients.map((c, i) => {
        const [a, b] = [before.marks[i]!.loop, after.marks[i]!.loop];
        const active = b.active - a.active;
        return { name: c.name, utilization: Number((active / Math.max(1e-9, active + b.idle - a.idle)).toFixed(3)) };
      });
      return { ...sent, base, before, after, windowS, cpu, clientLoops, rssEnd: rssBytes(api.pid) };
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
    const phase = async <M extends { clients: number; clientLoops: { utilization: number }[] }>(
      mode: 'likes only' | 'push' | 'poll',
      r: LikeRun,
      { clients: clientCount, ...measured }: M,
      { seen, problems = [], overload = [] }: { seen: string; problems?: string[]; overload?: string[] },
    ) => {
      const cores = `API ${(r.cpu.api / r.windowS).toFixed(2)}, ${m.coresUsed(r.cpu, r.windowS)}`;
      const loops = measured.clientLoops.map((c) => c.utilization).join(', ');
      log(`  ${mode}: ${seen}; likes ${r.load.rps.toFixed(0)}/s, p99 ${r.load.p99Ms} ms; cores ${cores}; client loops ${loops}`);
      const likesFailed = `${r.load.failures} likes failed (${r.load.unanswered} of them unanswered ${m.ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${r.failures[0]}`;
      const counts = await countsOff(r).then(
        (off) => ({ exact: off.length === 0, problems: off.length > 0 ? [`counts off: ${off.slice(0, 5).join('; ')}`] : [] }),
        (error: Error) => ({ exact: false, problems: [error.message] }),
      );
      return {
        ...{ mode, clients: clientCount, windowS: r.windowS, likes: r.load, cpu: r.cpu, ...measured, exact: counts.exact },
        problems: [...counts.problems, ...problems],
        overload: [...(r.load.failures > 0 ? [likesFailed] : []), ...overload],
      };
    };
    await firstSight(api.url, tokens);
    log(`  warm-up: ${m.LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await m.sendLikes(api.url, likesFor(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);
    const likesOnly = async () => {
      const r = await likePhase(await baseCounts());
      likesOnlyApiCpuPerLike = r.cpu.api / Math.max(1, r.load.acknowledged);
      r.cpu.apiNet = 0;
      const measured = { clients: 0, updates: 0, requests: 0, latency: null, rss: null, clientLoops: r.clientLoops };
      return phase('likes only', r, measured, { seen: 'no clients' });
    };
    const pushPhase = async () => {
      await idle(api.pid);
      const before = await m.apiMemory(api);
      const { subscribed, openSeconds } = await m.openSockets(api.url, clients, n, settings.sampledSockets, watched, log);
      await sleep(3000);
      const withSockets = await m.apiMemory(api);
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
      log(
        `  push: ${n} sockets subscribed in ${openSeconds.toFixed(1)} s; API RSS ${mib(before.rss)} → ${mib(withSockets.rss)} MiB, live heap + external ${mib(before.live)} → ${mib(withSockets.live)} MiB (after a full GC)`,
      );
      const metricsBefore = await metricsText(api.url);
      const r = await likePhase(await baseCounts());
      const pushesSoFar = async () => sum((await marks()).map((x) => x.pushes));
      await waitForQuiet(pushesSoFar, m.QUIET_MS, WATCH_AFTER_MS).catch(() => {});
      const updates = sum(r.after.marks.map((x) => x.pushes)) - sum(r.before.marks.map((x) => x.pushes));
      const reports = await Promise.all(clients.map((c) => c.call('sockets')));
      const metricsAfter = await metricsText(api.url);
      const delta = (name: string) => metric(metricsAfter, name) - metric(metricsBefore, name);
      const lag = 'tally_live_fan_out_lag_seconds';
      const fanOut = [histogram(metricsBefore, lag), histogram(metricsAfter, lag)] as const;
      const nothingLiked = (i: number) => watched(i).every((id) => r.acks[postIndex.get(Number(id))!]!.length === 0);
      const { totals, closedByServer, problems } = m.socketTotals(reports, n, nothingLiked);
      const sockets = {
        ...totals,
        subscribedOnServer: subscribed,
        closedByServer,
        openSeconds,
        serverPushes: delta('tally_live_pushes_total'),
        serverDropped: delta('tally_live_pushes_dropped_total'),
        serverFanOutP50Ms: bucketPercentile(...fanOut, 50),
        serverFanOutP99Ms: bucketPercentile(...fanOut, 99),
        pushesDue: m.pushesDue(r.offered, watchers, r.before.cpu.at, flushIntervalMs),
        pushesDelivered: updates,
      };
      // Sockets closed (at most 30 s) and the API idle before the counts are checked.
      const closed = sum(await Promise.all(clients.map((c) => c.call('closeAll'))));
      const open = async () => metric(await metricsText(api.url), 'tally_live_sockets');
      await waitFor(open, (count) => count === 0, { timeoutMs: 30_000, intervalMs: 250 }).catch(() => {});
      log(`  push: ${closed} sockets closed`);
      await idle(api.pid);
      const latency = m.pushLatency(reports[0]!.records, postIndex, r);
      const rss = m.memoryPerClient(before, withSockets, n, r.rssEnd);
      const seen =
        `${(updates / r.windowS).toFixed(0)} pushes/s to ${n} sockets (${sockets.pushesDue} due in the window, ${updates} received; server: ${sockets.serverPushes} handed out, ${sockets.serverDropped} replaced by newer, fan-out p50 ≤ ${sockets.serverFanOutP50Ms} ms, p99 ≤ ${sockets.serverFanOutP99Ms} ms); ` +
        `latency p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms (${latency.included}/${latency.samples} seen)`;
      const measured = { clients: n, updates, requests: 0, latency, rss, clientLoops: r.clientLoops };
      return { sockets, phase: await phase('push', r, measured, { seen, problems }) };
    };
    const pollPhase = async () => {
      const base = await baseCounts();
      const before = await m.apiMemory(api);
      const pollers = range(0, p).map((i) => ({ index: i, postIds: watched(i) }));
      const mine = (j: number) => pollers.filter((x) => x.index % bulk.length === j);
      await Promise.all(
        bulk.map((c, j) => c.call('startPolling', { url: api.url, query: m.POLL, pollers: mine(j), intervalMs: POLL_INTERVAL_MS })),
      );
      await sleep(3000);
      const withPollers = await m.apiMemory(api);
      const r = await likePhase(base);
      await sleep(POLL_INTERVAL_MS + 2000); // the last likes flushed and polled
      const reports = await Promise.all(bulk.map((c) => c.call('stopPolling')));
      const { latency, updates, requests } = m.pollLatency(reports, postIndex, r, r.before.cpu.at, r.after.cpu.at);
      const failures = sum(reports.map((x) => x.failures));
      const overload = failures > 0 ? [`${failures} polls failed`, ...reports.flatMap((x) => x.unexpected.slice(0, 3))] : [];
      const rss = m.memoryPerClient(before, withPollers, p, r.rssEnd);
      const seen = `${(requests / r.windowS).toFixed(0)} polls/s from ${p} pollers; staleness p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms`;
      const measured = { clients: p, updates, requests, latency, rss, clientLoops: r.clientLoops.slice(1) };
      return phase('poll', r, measured, { seen, overload });
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
