// Scenario "live counts": clients kept up to date by GraphQL subscriptions over WebSocket
// (postCountsChanged) against polling the same counts once a second, while likes arrive;
// one API process and one worker on a database and key prefix of their own. The method is
// described in docs/performance.md ("Live counts").
import { createAuth } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { type BenchEnv, tallyEnv } from '../lib/env.js';
import { type LiveClients, startLiveClients } from '../lib/liveClients.js';
import { runLoad } from '../lib/load.js';
import { bucketPercentile, histogram, metric, metricsText } from '../lib/metrics.js';
import { cpuBetween, cpuSeconds, idle, localRedisPid, openFilesLimit, readCpu, rssBytes } from '../lib/procStats.js';
import { openSeeder, range } from '../lib/seed.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import {
  ANSWER_WAIT_MS,
  apiMemory,
  type Cpu,
  coresLine,
  FIRST_LIKER,
  LIKE_CONNECTIONS,
  LIKERS,
  LIVE_POSTS,
  type LivePhase,
  type LiveSettings,
  likeSchedule,
  POLL,
  pollLatency,
  pushesDue,
  pushLatency,
  sendLikes,
  settledCounts,
  WATCHED,
} from './liveMeasure.js';
import { closeSockets, openSockets, socketProblems, socketTotals, untilQuiet } from './liveSockets.js';

export { LIVE_POSTS, type LivePhase, liveSettings, WATCHED } from './liveMeasure.js';
export const POLL_INTERVAL_MS = 1000;
const WARMUP_S = 3;
/** The poll query at full load (closed loop): connections and seconds. */
const FULL_LOAD_CONNECTIONS = 16;
const FULL_LOAD_S = 5;

export type LiveResults = Awaited<ReturnType<typeof runLiveScenario>>;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** LIVE_POSTS posts by 10 authors, through Tally's commands; their ids. */
async function seedPosts(serverEnv: Record<string, string>): Promise<string[]> {
  const seeder = await openSeeder(serverEnv);
  try {
    await seeder.addUsers(range(1, 10), 'Author');
    const ids: string[] = [];
    for (let i = 0; i < LIVE_POSTS; i++) ids.push(String((await seeder.post(1 + (i % 10), `live post ${i}`)).id));
    return ids;
  } finally {
    await seeder.close();
  }
}

export async function runLiveScenario(opts: { env: BenchEnv; settings: LiveSettings; log: (line: string) => void }) {
  const { settings, log } = opts;
  const { sockets: n, pollers: p, likesPerS: rate, durationS } = settings;
  const serverEnv: Record<string, string> = {
    ...tallyEnv(opts.env),
    // Every socket comes from 127.0.0.1, and each counts as a connection of the HTTP server.
    WS_MAX_CONNECTIONS_PER_CLIENT: '100000',
    HTTP_MAX_CONNECTIONS: '1000000',
  };
  const openFiles = openFilesLimit();
  const postIds = await seedPosts(serverEnv);
  const postIndex = new Map(postIds.map((id, i) => [Number(id), i]));
  const watched = (i: number) => Array.from({ length: WATCHED }, (_, m) => postIds[(i + m) % LIVE_POSTS]!);
  /** Sockets watching each post. */
  const watchers = Array.from({ length: LIVE_POSTS }, () => 0);
  for (let i = 0; i < n; i++) for (let m = 0; m < WATCHED; m++) watchers[(i + m) % LIVE_POSTS]! += 1;
  const { flushIntervalMs } = loadConfig(serverEnv);
  const auth = createAuth(serverEnv.JWT_SECRET!);
  const tokens: string[] = [];
  for (let u = 0; u < LIKERS; u++) tokens.push(await auth.sign(FIRST_LIKER + u));
  const likesFor = likeSchedule(postIds, tokens);

  const servers: ServerHandle[] = [];
  const clients: LiveClients[] = [];
  try {
    const worker = await startServer('tally', { ...serverEnv, ROLE: 'worker' });
    servers.push(worker);
    // --expose-gc: the bench collects garbage before it reads the API's live memory (nothing else calls gc).
    const api = await startServer('tally', { ...serverEnv, ROLE: 'api' }, process.execPath, n + p + LIKE_CONNECTIONS + 1024, [
      '--expose-gc',
    ]);
    servers.push(api);
    clients.push(await startLiveClients('timed sockets', settings.sampledSockets + 256));
    for (let k = 0; k < settings.clientProcesses; k++) {
      clients.push(await startLiveClients(`clients ${k + 1}`, Math.ceil(Math.max(n, p) / settings.clientProcesses) + 256));
    }
    const bulk = clients.slice(1);
    const redisPid = await localRedisPid(serverEnv.REDIS_URL!);

    const { liveBytes, memoryBefore, memoryWith } = apiMemory(api);
    const pids = { api: api.pid, worker: worker.pid, redis: redisPid, clients: clients.map((c) => c.pid) };
    const snapshot = async () => ({ marks: await Promise.all(clients.map((c) => c.mark())), ...readCpu(pids) });
    /** API CPU seconds per like answered in the likes-only phase (its idle share included). */
    let likesOnlyApiCpuPerLike = 0;

    /** One phase's likes, CPU and client marks taken from the first like sent to the last answered. */
    const likePhase = async (base: number[]) => {
      const likes = likesFor(Math.round(rate * durationS));
      const before = await snapshot();
      const sent = await sendLikes(api.url, likes, rate);
      const after = await snapshot();
      const { windowS, postgres: _, ...used } = cpuBetween(before, after);
      const cpu: Cpu = { ...used, apiNet: used.api - likesOnlyApiCpuPerLike * sent.load.acknowledged };
      const clientLoops = clients.map((c, i) => {
        const [a, b] = [before.marks[i]!.loop, after.marks[i]!.loop];
        const active = b.active - a.active;
        return { name: c.name, utilization: Number((active / Math.max(1e-9, active + b.idle - a.idle)).toFixed(3)) };
      });
      return { ...sent, base, before, after, windowS, cpu, clientLoops };
    };
    type PhaseRun = Awaited<ReturnType<typeof likePhase>>;

    /** The counts before a phase, once the API is idle and the counts stopped moving. */
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return settledCounts(api.url, postIds);
    };
    /**
     * After a phase: every post's count is its count before plus the likes acknowledged, plus
     * at most the likes whose answer failed or was abandoned (they may or may not have counted).
     */
    const verify = async (r: PhaseRun) => {
      const overload =
        r.load.failures > 0
          ? [
              `${r.load.failures} likes failed (${r.load.unanswered} of them unanswered ${ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${r.failures[0]}`,
            ]
          : [];
      try {
        const off = (await settledCounts(api.url, postIds)).flatMap((c, i) => {
          const least = r.base[i]! + r.acks[i]!.length;
          const most = least + r.failed[i]!;
          return c >= least && c <= most ? [] : [`post ${postIds[i]}: ${c}, expected ${least}${most > least ? ` to ${most}` : ''}`];
        });
        return { exact: off.length === 0, problems: off.length > 0 ? [`counts off: ${off.slice(0, 5).join('; ')}`] : [], overload };
      } catch (error) {
        return { exact: false, problems: [(error as Error).message], overload };
      }
    };
    const phaseOf = (
      mode: LivePhase['mode'],
      clientCount: number,
      r: PhaseRun,
      rest: Pick<LivePhase, 'updates' | 'requests' | 'latency' | 'rss' | 'clientLoops'>,
      checked: Awaited<ReturnType<typeof verify>>,
    ): LivePhase => ({
      mode,
      clients: clientCount,
      windowS: r.windowS,
      likes: r.load,
      cpu: r.cpu,
      ...rest,
      ...checked,
    });
    const phases: LivePhase[] = [];

    // Warm-up, not timed: every liker's first sight, the like path and the flush.
    let k = 0;
    const firstSight = await runLoad({
      url: api.url,
      connections: 32,
      amount: LIKERS,
      next: () => ({ body: JSON.stringify({ query: '{ __typename }' }), headers: { authorization: `Bearer ${tokens[k++ % LIKERS]}` } }),
    });
    if (firstSight.failures > 0) throw new Error(`${firstSight.failures} first-sight requests failed`);
    log(`  warm-up: ${LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await sendLikes(api.url, likesFor(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);

    // 1. Likes only: what the likes cost the API, subtracted from the other phases.
    {
      const r = await likePhase(await baseCounts());
      likesOnlyApiCpuPerLike = r.cpu.api / Math.max(1, r.load.acknowledged);
      r.cpu.apiNet = 0;
      phases.push(
        phaseOf('likes only', 0, r, { updates: 0, requests: 0, latency: null, rss: null, clientLoops: r.clientLoops }, await verify(r)),
      );
      log(`  likes only: ${r.load.rps.toFixed(0)} likes/s, p99 ${r.load.p99Ms} ms; ${coresLine(r.cpu, r.windowS)}`);
    }

    // 2. Push: N sockets, all subscribed before the likes start.
    const sockets = await (async () => {
      const before = await memoryBefore();
      const { subscribed, openSeconds } = await openSockets(api.url, clients, n, settings.sampledSockets, watched, log);
      await sleep(3000);
      const rss = await memoryWith(before, n);
      const shown = rss(Number.NaN);
      const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(0);
      log(
        `  push: ${n} sockets subscribed in ${openSeconds.toFixed(1)} s; API RSS ${mib(shown.beforeBytes)} → ${mib(shown.withClientsBytes)} MiB, live heap + external ${mib(shown.liveBeforeBytes)} → ${mib(shown.liveWithClientsBytes)} MiB (after a full GC)`,
      );
      const metricsBefore = await metricsText(api.url);
      const r = await likePhase(await baseCounts());
      const rssEnd = rssBytes(api.pid);
      await untilQuiet(clients);
      const updates = r.after.marks.reduce((s, m) => s + m.pushes, 0) - r.before.marks.reduce((s, m) => s + m.pushes, 0);
      const reports = await Promise.all(clients.map((c) => c.sockets()));
      const metricsAfter = await metricsText(api.url);
      const delta = (name: string) => metric(metricsAfter, name) - metric(metricsBefore, name);
      const lag = 'tally_live_fan_out_lag_seconds';
      const fanOut = [histogram(metricsBefore, lag), histogram(metricsAfter, lag)] as const;
      const totals = socketTotals(reports, (i) => watched(i).every((id) => r.acks[postIndex.get(Number(id))!]!.length === 0));
      const { closedByServer, ...counted } = totals;
      const result = {
        ...counted,
        subscribedOnServer: subscribed,
        closedByServer,
        openSeconds,
        serverPushes: delta('tally_live_pushes_total'),
        serverDropped: delta('tally_live_pushes_dropped_total'),
        serverFanOutP50Ms: bucketPercentile(...fanOut, 50),
        serverFanOutP99Ms: bucketPercentile(...fanOut, 99),
        pushesDue: pushesDue(r.offered, watchers, r.before.at, flushIntervalMs),
        pushesDelivered: updates,
      };
      // Sockets closed, and whatever the API still had to do done, before the counts are checked.
      log(`  push: ${await closeSockets(api.url, clients)} sockets closed`);
      await idle(api.pid);
      const checked = await verify(r);
      checked.problems.push(...socketProblems(totals, n, reports));
      const latency = pushLatency(reports[0]!.records, postIndex, r);
      phases.push(phaseOf('push', n, r, { updates, requests: 0, latency, rss: rss(rssEnd), clientLoops: r.clientLoops }, checked));
      log(
        `  push: ${(updates / r.windowS).toFixed(0)} pushes/s to ${n} sockets (${result.pushesDue} due in the window, ${updates} received; server: ${result.serverPushes} handed out, ${result.serverDropped} replaced by newer, fan-out p50 ≤ ${result.serverFanOutP50Ms} ms, p99 ≤ ${result.serverFanOutP99Ms} ms); ` +
          `latency p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms (${latency.included}/${latency.samples} seen); likes p99 ${r.load.p99Ms} ms; ` +
          `${coresLine(r.cpu, r.windowS)}; client loops ${r.clientLoops.map((c) => c.utilization).join(', ')}`,
      );
      return result;
    })();

    // 3. Polling: P pollers, once a second each, the same 20 posts as the socket of their index.
    {
      const base = await baseCounts();
      const before = { live: await liveBytes(), rss: rssBytes(api.pid) };
      const pollers = range(0, p).map((i) => ({ index: i, postIds: watched(i) }));
      await Promise.all(
        bulk.map((c, j) =>
          c.startPolling(
            api.url,
            POLL,
            pollers.filter((x) => x.index % bulk.length === j),
            POLL_INTERVAL_MS,
          ),
        ),
      );
      await sleep(3000);
      const rss = await memoryWith(before, p);
      const r = await likePhase(base);
      const rssEnd = rssBytes(api.pid);
      await sleep(POLL_INTERVAL_MS + 2000); // the last likes flushed and polled
      const reports = await Promise.all(bulk.map((c) => c.stopPolling()));
      const { latency, updates, requests } = pollLatency(reports, postIndex, r, r.before.at, r.after.at);
      const checked = await verify(r);
      const pollFailures = reports.reduce((s, x) => s + x.failures, 0);
      if (pollFailures > 0) checked.overload.push(`${pollFailures} polls failed`, ...reports.flatMap((x) => x.unexpected.slice(0, 3)));
      const clientLoops = r.clientLoops.slice(1);
      phases.push(phaseOf('poll', p, r, { updates, requests, latency, rss: rss(rssEnd), clientLoops }, checked));
      log(
        `  poll: ${(requests / r.windowS).toFixed(0)} polls/s from ${p} pollers; staleness p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms; ` +
          `${coresLine(r.cpu, r.windowS)}; client loops ${clientLoops.map((c) => c.utilization).join(', ')}`,
      );
    }

    // 4. The poll query at full load, no likes: its cheapest CPU per request (a busy server
    // shares work between requests), the polling cost most favourable to polling.
    await baseCounts();
    const body = JSON.stringify({ query: POLL, variables: { ids: watched(0) } });
    await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: 2, body });
    const cpu0 = cpuSeconds(api.pid);
    const full = await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: FULL_LOAD_S, body });
    const pollAtFullLoad = {
      connections: FULL_LOAD_CONNECTIONS,
      rps: full.rps,
      p99Ms: full.p99Ms,
      failures: full.failures,
      cpuPerRequestS: (cpuSeconds(api.pid) - cpu0) / Math.max(1, full.requests),
    };
    if (full.failures > 0) phases.find((x) => x.mode === 'poll')!.problems.push(`${full.failures} poll queries failed at full load`);
    log(
      `  poll query at full load (${FULL_LOAD_CONNECTIONS} connections, no likes): ${full.rps.toFixed(0)} req/s, ${(pollAtFullLoad.cpuPerRequestS * 1e6).toFixed(0)} µs of API CPU per request`,
    );
    return { settings, openFiles, phases, sockets, pollAtFullLoad, method: 'docs/performance.md#live-counts' };
  } finally {
    // Sockets first (their processes terminate them), then the servers.
    for (const c of clients) await c.stop();
    for (const server of servers.reverse()) await server.stop();
  }
}
