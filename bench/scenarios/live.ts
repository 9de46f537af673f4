// Scenario "live counts": one loop of likes and what the clients saw of them, run with no clients, with sockets, with pollers.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { random, shuffled } from '../../prisma/random.js';
import { loadConfig } from '../../src/config.js';
import { waitFor } from '../../test/support/wait.js';
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { sum } from '../lib/freshness.js';
import type { ClientSpec, LiveCommands } from '../lib/liveClientProcess.js';
import { firstSight, likeBody, runLoad } from '../lib/load.js';
import { bucketPercentile, histogram, metric, metricsText } from '../lib/metrics.js';
import { cpuBetween, cpuSeconds, idle, openFilesLimit, readCpu, rssBytes } from '../lib/procStats.js';
import { range, withSeeder } from '../lib/seed.js';
import { entryOf, startChild, startDeployment, waitForQuiet } from '../lib/servers.js';
import * as m from './liveMeasure.js';

export const [LIVE_POSTS, WATCHED, POLL_INTERVAL_MS] = [100, 20, 1000]; // posts; posts each client watches
const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes favs asOf } } }';
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
/** Like j is user FIRST_LIKER + j % LIKERS on post (j + ⌊j / LIKERS⌋) % 100: a new (user, post) pair for j < 100 × LIKERS. */
const [FIRST_LIKER, LIKERS] = [1000, 1000];
const [OPEN_BATCH, WARMUP_S, FULL_LOAD_CONNECTIONS, FULL_LOAD_S, WATCH_AFTER_MS] = [500, 3, 16, 5, 30_000];
const FAN_OUT_LAG = 'tally_live_fan_out_lag_seconds';

export type LiveResults = Awaited<ReturnType<typeof runLiveScenario>>;
type Log = (line: string) => void;

export function liveSettings() {
  const sockets = intSetting('BENCH_LIVE_SOCKETS', 10_000, 100_000);
  const [pollers, likesPerS] = [intSetting('BENCH_LIVE_POLLERS', 200, 100_000), intSetting('BENCH_LIVE_LIKES_PER_S', 200, 10_000)];
  const [durationS, clientProcesses] = [intSetting('BENCH_LIVE_DURATION_S', 30, 3600), intSetting('BENCH_LIVE_CLIENT_PROCESSES', 2, 64)];
  return { sockets, pollers, likesPerS, durationS, clientProcesses, sampledSockets: Math.min(200, sockets) }; // timed sockets
}

async function startClients(name: string, openFiles: number) {
  const entry = entryOf('liveClientProcess');
  const child = await startChild(`live clients ${name}`, process.execPath, entry, { openFiles, readyWithinMs: 30_000 });
  const call = <C extends keyof LiveCommands>(cmd: C, args?: Parameters<LiveCommands[C]>[0]) =>
    child.call<Awaited<ReturnType<LiveCommands[C]>>>(cmd, args);
  return { name, pid: child.pid, call, stop: child.stop };
}
type Clients = Awaited<ReturnType<typeof startClients>>;

export async function runLiveScenario({ env, settings, log }: { env: BenchEnv; settings: ReturnType<typeof liveSettings>; log: Log }) {
  const { sockets: n, pollers: p, likesPerS: rate, durationS } = settings;
  // Every socket comes from 127.0.0.1, and each counts as a connection of the HTTP server.
  const serverEnv = { ...tallyEnv(env), WS_MAX_CONNECTIONS_PER_CLIENT: '100000', HTTP_MAX_CONNECTIONS: '1000000' };
  const [openFiles, postIds, likers] = [openFilesLimit(), [] as string[], range(FIRST_LIKER, LIKERS)];
  const tokens = await withSeeder(serverEnv, async (seeder) => {
    await seeder.addUsers(range(1, 10), 'Author');
    for (let i = 0; i < LIVE_POSTS; i++) postIds.push(String((await seeder.post(1 + (i % 10), `live post ${i}`)).id));
    const tokens = await seeder.tokens(likers);
    return likers.map((id) => tokens.get(id)!);
  });
  const postIndex = new Map(postIds.map((id, i) => [Number(id), i]));
  const watched = (i: number) => Array.from({ length: WATCHED }, (_, k) => postIds[(i + k) % LIVE_POSTS]!);
  const watchers = Array.from({ length: LIVE_POSTS }, () => 0); // sockets watching each post
  for (let i = 0; i < n; i++) for (let k = 0; k < WATCHED; k++) watchers[(i + k) % LIVE_POSTS]! += 1;
  let likesSent = 0;
  const nextLikes = (count: number) => {
    if (likesSent + count > LIKERS * LIVE_POSTS) throw new Error(`at most ${LIKERS * LIVE_POSTS} likes per run`);
    return Array.from({ length: count }, () => {
      const j = likesSent++;
      const post = (j + Math.floor(j / LIKERS)) % LIVE_POSTS;
      return { post, token: tokens[j % LIKERS]!, body: likeBody(postIds[post]!) };
    });
  };
  const clients: Clients[] = [];
  // --expose-gc: the bench collects garbage before it reads the API's live memory.
  const deployment = await startDeployment(serverEnv, n + p + m.LIKE_CONNECTIONS + 1024, ['--expose-gc']);
  const { api } = deployment;
  try {
    clients.push(await startClients('timed sockets', settings.sampledSockets + 256));
    for (let k = 1; k <= settings.clientProcesses; k++) {
      clients.push(await startClients(`clients ${k}`, Math.ceil(Math.max(n, p) / settings.clientProcesses) + 256));
    }
    const bulk = clients.slice(1);
    const pids = { ...deployment.pids, clients: clients.map((c) => c.pid) };
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return m.settledCounts(api.url, postIds);
    };
    const memoryAround = async (connect: () => Promise<unknown>) => {
      const memory = async () => {
        const { heapUsed, external, collected } = await api.memory();
        if (!collected) throw new Error('the API was started without --expose-gc');
        return { live: heapUsed + external, rss: rssBytes(api.pid) };
      };
      const before = await memory();
      await connect();
      await sleep(3000);
      return { before, withClients: await memory() };
    };
    let apiCpuPerLike = 0;
    const likePhase = async (base: number[], processes: Clients[], watching = true) => {
      const marks = () => Promise.all(processes.map((c) => c.call('mark')));
      const before = { marks: await marks(), cpu: readCpu(pids) };
      const sent = await m.sendLikes(api.url, nextLikes(Math.round(rate * durationS)), rate);
      const after = { marks: await marks(), cpu: readCpu(pids) };
      const { windowS, postgres: _, ...used } = cpuBetween(before.cpu, after.cpu);
      const cpu = { ...used, apiNet: used.api - apiCpuPerLike * sent.load.acknowledged };
      const clientLoops = processes.map((c, i) => {
        const { utilization } = performance.eventLoopUtilization(after.marks[i]!.loop, before.marks[i]!.loop);
        return { name: c.name, utilization: Number(utilization.toFixed(3)) };
      });
      const rssEnd = rssBytes(api.pid);
      const total = (x: Awaited<ReturnType<typeof marks>>, key: 'updates' | 'answers') => sum(x.map((y) => y[key]));
      if (watching) await waitForQuiet(async () => total(await marks(), 'updates'), m.QUIET_MS, WATCH_AFTER_MS).catch(() => {});
      const reports = await Promise.all(processes.map((c) => c.call('report')));
      const r = { ...sent, base, windowS, from: before.cpu.at, cpu, clientLoops, rssEnd, reports };
      const counted = (key: 'updates' | 'answers') => total(after.marks, key) - total(before.marks, key);
      const latency = watching ? m.latencyOf(r, reports, postIndex) : null;
      return { ...r, measured: { updates: counted('updates'), requests: counted('answers'), latency } };
    };
    type Extra = { seen: string; rss?: m.PerClient | null; problems?: string[]; overload?: string[] };
    type Mode = 'likes only' | 'push' | 'poll';
    const phase = async (mode: Mode, r: Awaited<ReturnType<typeof likePhase>>, clientCount: number, extra: Extra) => {
      const cores = `API ${(r.cpu.api / r.windowS).toFixed(2)}, ${m.coresUsed(r.cpu, r.windowS)}`;
      const loops = r.clientLoops.map((c) => c.utilization).join(', ');
      log(`  ${mode}: ${extra.seen}; likes ${r.load.rps.toFixed(0)}/s, p99 ${r.load.p99Ms} ms; cores ${cores}; client loops ${loops}`);
      const likesFailed = `${r.load.failures} likes failed (${r.load.unanswered} of them unanswered ${m.ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${r.failures[0]}`;
      // Each count must be its base + the likes acknowledged, + at most the likes that failed (they may have counted).
      const off = await m.settledCounts(api.url, postIds).then(
        (counts) =>
          counts.flatMap((c, i) => {
            const [least, most] = [r.base[i]! + r.acks[i]!.length, r.base[i]! + r.acks[i]!.length + r.failed[i]!];
            return c >= least && c <= most ? [] : [`post ${postIds[i]}: ${c}, expected ${least}${most > least ? ` to ${most}` : ''}`];
          }),
        (error: Error) => error,
      );
      const countProblems = off instanceof Error ? [off.message] : off.length > 0 ? [`counts off: ${off.slice(0, 5).join('; ')}`] : [];
      const { windowS, load: likes, cpu, measured, clientLoops } = r;
      const [rss, exact] = [extra.rss ?? null, countProblems.length === 0];
      return {
        ...{ mode, clients: clientCount, windowS, likes, cpu, ...measured, rss, clientLoops, exact },
        problems: [...countProblems, ...(extra.problems ?? [])],
        overload: [...(r.load.failures > 0 ? [likesFailed] : []), ...(extra.overload ?? [])],
      };
    };
    await firstSight(api.url, tokens);
    log(`  warm-up: ${LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await m.sendLikes(api.url, nextLikes(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);

    const likesOnly = await likePhase(await baseCounts(), clients, false);
    apiCpuPerLike = likesOnly.cpu.api / Math.max(1, likesOnly.load.acknowledged);
    likesOnly.cpu.apiNet = 0;
    const likesAlone = await phase('likes only', likesOnly, 0, { seen: 'no clients' });

    let base = await baseCounts();
    let opened = { subscribed: 0, openSeconds: 0 };
    const connect = async () => (opened = await openSockets(api.url, clients, n, settings.sampledSockets, watched, log));
    const pushMemory = await memoryAround(connect);
    const [mib, a, b] = [(bytes: number) => (bytes / 2 ** 20).toFixed(0), pushMemory.before, pushMemory.withClients];
    const memory = `API RSS ${mib(a.rss)} → ${mib(b.rss)} MiB, live heap + external ${mib(a.live)} → ${mib(b.live)} MiB (after a full GC)`;
    log(`  push: ${n} sockets subscribed in ${opened.openSeconds.toFixed(1)} s; ${memory}`);
    await idle(api.pid);
    const metricsBefore = await metricsText(api.url);
    const pushRun = await likePhase(base, clients);
    const metricsAfter = await metricsText(api.url);
    const { updates, latency } = pushRun.measured;
    const delta = (name: string) => metric(metricsAfter, name) - metric(metricsBefore, name);
    const fanOut = [histogram(metricsBefore, FAN_OUT_LAG), histogram(metricsAfter, FAN_OUT_LAG)] as const;
    const nothingLiked = (i: number) => watched(i).every((id) => pushRun.acks[postIndex.get(Number(id))!]!.length === 0);
    const { totals, closedByServer, problems } = m.socketTotals(pushRun.reports, n, nothingLiked);
    const sockets = {
      ...{ ...totals, subscribedOnServer: opened.subscribed, closedByServer, openSeconds: opened.openSeconds },
      ...{ serverPushes: delta('tally_live_pushes_total'), serverDropped: delta('tally_live_pushes_dropped_total') },
      ...{ serverFanOutP50Ms: bucketPercentile(...fanOut, 50), serverFanOutP99Ms: bucketPercentile(...fanOut, 99) },
      ...{
        pushesDue: m.pushesDue(pushRun.offered, watchers, pushRun.from, loadConfig(serverEnv).flushIntervalMs),
        pushesDelivered: updates,
      },
    };
    // Sockets closed (at most 30 s) and the API idle before the counts are checked.
    const closed = sum(await Promise.all(clients.map((c) => c.call('closeAll'))));
    const liveSockets = async () => metric(await metricsText(api.url), 'tally_live_sockets');
    await waitFor(liveSockets, (count) => count === 0, { timeoutMs: 30_000, intervalMs: 250 }).catch(() => {});
    log(`  push: ${closed} sockets closed`);
    await idle(api.pid);
    const pushSeen =
      `${(updates / pushRun.windowS).toFixed(0)} pushes/s to ${n} sockets (${sockets.pushesDue} due in the window, ${updates} received; server: ${sockets.serverPushes} handed out, ${sockets.serverDropped} replaced by newer, fan-out p50 ≤ ${sockets.serverFanOutP50Ms} ms, p99 ≤ ${sockets.serverFanOutP99Ms} ms); ` +
      `latency p50 ${latency!.p50Ms} ms, p99 ${latency!.p99Ms} ms (${latency!.included}/${latency!.samples} seen)`;
    const push = await phase('push', pushRun, n, { seen: pushSeen, rss: m.memoryPerClient(pushMemory, n, pushRun.rssEnd), problems });

    base = await baseCounts();
    const pollers = (j: number) => range(0, p).flatMap((i) => (i % bulk.length === j ? [{ index: i, postIds: watched(i) }] : []));
    const start = { kind: 'poller', url: api.url, query: POLL, record: true, intervalMs: POLL_INTERVAL_MS } as const;
    const pollMemory = await memoryAround(() => Promise.all(bulk.map((c, j) => c.call('open', { ...start, clients: pollers(j) }))));
    const pollRun = await likePhase(base, bulk);
    await Promise.all(bulk.map((c) => c.call('closeAll')));
    const pollFailures = sum(pollRun.reports.map((x) => x.failures));
    const overload = pollFailures > 0 ? [`${pollFailures} polls failed`, ...pollRun.reports.flatMap((x) => x.unexpected.slice(0, 3))] : [];
    const { requests, latency: staleness } = pollRun.measured;
    const pollSeen = `${(requests / pollRun.windowS).toFixed(0)} polls/s from ${p} pollers; staleness p50 ${staleness!.p50Ms} ms, p99 ${staleness!.p99Ms} ms`;
    const poll = await phase('poll', pollRun, p, { seen: pollSeen, rss: m.memoryPerClient(pollMemory, p, pollRun.rssEnd), overload });

    await baseCounts();
    const body = JSON.stringify({ query: POLL, variables: { ids: watched(0) } });
    await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: 2, body });
    const cpu0 = cpuSeconds(api.pid);
    const full = await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: FULL_LOAD_S, body });
    const { rps, p99Ms, failures } = full;
    const cpuPerRequestS = (cpuSeconds(api.pid) - cpu0) / Math.max(1, full.requests);
    const pollAtFullLoad = { connections: FULL_LOAD_CONNECTIONS, rps, p99Ms, failures, cpuPerRequestS };
    if (failures > 0) poll.problems.push(`${failures} poll queries failed at full load`);
    const perRequest = `${(cpuPerRequestS * 1e6).toFixed(0)} µs of API CPU per request`;
    log(`  poll query at full load (${FULL_LOAD_CONNECTIONS} connections, no likes): ${rps.toFixed(0)} req/s, ${perRequest}`);
    const phases = [likesAlone, push, poll] as const;
    return { settings, openFiles, phases, sockets, pollAtFullLoad, method: 'docs/performance.md#live-counts' };
  } finally {
    for (const c of clients) await c.stop(); // sockets first, then the servers
    await deployment.stop();
  }
}

async function openSockets(url: string, clients: Clients[], n: number, timed: number, watched: (i: number) => string[], log: Log) {
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
