// Scenario "live counts" (docs/performance.md#live-counts): one loop of likes and what the clients saw of them, run with no
// clients, with sockets, with pollers; then the poll query alone at full load.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { random, shuffled } from '../../prisma/random.js';
import { loadConfig } from '../../src/config.js';
import { waitFor } from '../../test/support/wait.js';
import { type BenchEnv, intSetting, tallyEnv } from '../lib/env.js';
import { sum } from '../lib/freshness.js';
import type { ClientSpec, LiveCommands } from '../lib/liveClientProcess.js';
import { firstSight, likeBody, runLoad } from '../lib/load.js';
import { metric, metricsText } from '../lib/metrics.js';
import { cpuBetween, cpuSeconds, idle, openFilesLimit, readCpu, rssBytes } from '../lib/procStats.js';
import { range, withSeeder } from '../lib/seed.js';
import { entryOf, startChild, startDeployment, waitForQuiet } from '../lib/servers.js';
import * as m from './liveMeasure.js';

export const [LIVE_POSTS, WATCHED, POLL_INTERVAL_MS] = [100, 20, 1000]; // posts; posts each client watches
const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes favs asOf } } }';
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
/** Like j is user FIRST_LIKER + j % LIKERS on post (j + ⌊j / LIKERS⌋) % 100: a new (user, post) pair for j < 100 × LIKERS. */
const [FIRST_LIKER, LIKERS] = [1000, 1000];
const [OPEN_BATCH, WARMUP_S, FULL_LOAD_CONNECTIONS, FULL_LOAD_S] = [500, 3, 16, 5];
const WATCH_AFTER_MS = 30_000; // at most, for the clients' updates to stop

export type LiveResults = Awaited<ReturnType<typeof runLiveScenario>>;
type Log = (line: string) => void;
/** What a phase does beside the likes: connect its clients, get ready for the likes, settle before the counts are checked. */
type Steps = { connect?: () => Promise<unknown>; ready?: () => Promise<unknown>; settle?: () => Promise<unknown> };

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
    const perProcess = Math.ceil(Math.max(n, p) / settings.clientProcesses) + 256; // open files
    clients.push(await startClients('timed sockets', settings.sampledSockets + 256));
    for (let k = 1; k <= settings.clientProcesses; k++) clients.push(await startClients(`clients ${k}`, perProcess));
    const [bulk, pids] = [clients.slice(1), { ...deployment.pids, clients: clients.map((c) => c.pid) }];
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return m.settledCounts(api.url, postIds);
    };
    const apiMemory = async () => {
      const { heapUsed, external, collected } = await api.memory();
      if (!collected) throw new Error('the API was started without --expose-gc');
      return { live: heapUsed + external, rss: rssBytes(api.pid) };
    };

    let apiCpuPerLike = 0; // the likes-only phase's, subtracted from the others
    /** One phase: `count` clients on `processes` connected, the likes sent, the clients watched and asked, the counts checked. */
    const phase = async (mode: 'likes only' | 'push' | 'poll', processes: Clients[], count: number, steps: Steps = {}) => {
      const base = await baseCounts();
      const before = steps.connect && (await apiMemory());
      await steps.connect?.();
      const withClients = before && (await sleep(3000).then(apiMemory));
      if (before && withClients) log(`  ${mode}: ${m.memoryChange(before, withClients)}`);
      await steps.ready?.();
      const mark = async () => {
        const marks = await Promise.all(processes.map((c) => c.call('mark')));
        return { updates: sum(marks.map((x) => x.updates)), answers: sum(marks.map((x) => x.answers)), loops: marks.map((x) => x.loop) };
      };
      const start = { ...(await mark()), cpu: readCpu(pids) };
      const sent = await m.sendLikes(api.url, nextLikes(Math.round(rate * durationS)), rate);
      const end = { ...(await mark()), cpu: readCpu(pids) };
      const { windowS, postgres: _, ...used } = cpuBetween(start.cpu, end.cpu);
      const cpu = { ...used, apiNet: count === 0 ? 0 : used.api - apiCpuPerLike * sent.load.acknowledged };
      const utilization = (i: number) => performance.eventLoopUtilization(end.loops[i]!, start.loops[i]!).utilization;
      const clientLoops = processes.map((c, i) => ({ name: c.name, utilization: Number(utilization(i).toFixed(3)) }));
      const rss = before && withClients ? m.memoryPerClient(before, withClients, count, rssBytes(api.pid)) : null;
      if (count > 0) await waitForQuiet(async () => (await mark()).updates, m.QUIET_MS, WATCH_AFTER_MS).catch(() => {});
      const reports = await Promise.all(processes.map((c) => c.call('report')));
      await steps.settle?.();
      const [liked, updates, requests] = [{ ...sent, base }, end.updates - start.updates, end.answers - start.answers];
      const latency = count > 0 ? m.latencyOf(liked, reports, postIndex) : null;
      const problems = m.countsOff(await m.settledCounts(api.url, postIds).catch((error: Error) => error), liked, postIds);
      const { failures, unanswered } = sent.load;
      const likesFailed = `${failures} likes failed (${unanswered} of them unanswered ${m.ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${sent.failures[0]}`;
      const results = {
        ...{ mode, clients: count, windowS, likes: sent.load, cpu, updates, requests, latency, rss, clientLoops },
        ...{ exact: problems.length === 0, problems, overload: failures > 0 ? [likesFailed] : [] },
      };
      log(`  ${mode}: ${m.usage(results)}`);
      return { results, sent, reports, from: start.cpu.at };
    };

    await firstSight(api.url, tokens);
    log(`  warm-up: ${LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await m.sendLikes(api.url, nextLikes(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);
    const likesOnly = (await phase('likes only', clients, 0)).results;
    apiCpuPerLike = likesOnly.cpu.api / Math.max(1, likesOnly.likes.acknowledged);

    let [opened, metricsBefore, metricsAfter] = [{ subscribed: 0, openSeconds: 0 }, null as string | null, null as string | null];
    const pushRun = await phase('push', clients, n, {
      connect: async () => (opened = await openSockets(api.url, clients, n, settings.sampledSockets, watched, log)),
      ready: async () => (metricsBefore = await idle(api.pid).then(() => metricsText(api.url))),
      // Sockets closed (at most 30 s) and the API idle before the counts are checked.
      settle: async () => {
        metricsAfter = await metricsText(api.url);
        const closed = sum(await Promise.all(clients.map((c) => c.call('closeAll'))));
        const liveSockets = async () => metric(await metricsText(api.url), 'tally_live_sockets');
        await waitFor(liveSockets, (count) => count === 0, { timeoutMs: 30_000, intervalMs: 250 }).catch(() => {});
        log(`  push: ${closed} sockets closed`);
        await idle(api.pid);
      },
    });
    const push = pushRun.results;
    const nothingLiked = (i: number) => watched(i).every((id) => pushRun.sent.acks[postIndex.get(Number(id))!]!.length === 0);
    const { problems, ...counted } = m.socketTotals(pushRun.reports, n, nothingLiked, opened);
    push.problems.push(...problems);
    const pushesDue = m.pushesDue(pushRun.sent.offered, watchers, pushRun.from, loadConfig(serverEnv).flushIntervalMs);
    const sockets = { ...counted, ...m.serverPushes(metricsBefore, metricsAfter), pushesDue, pushesDelivered: push.updates };

    const pollers = (j: number) => range(0, p).flatMap((i) => (i % bulk.length === j ? [{ index: i, postIds: watched(i) }] : []));
    const poller = { kind: 'poller', url: api.url, query: POLL, record: true, intervalMs: POLL_INTERVAL_MS } as const;
    const pollRun = await phase('poll', bulk, p, {
      connect: () => Promise.all(bulk.map((c, j) => c.call('open', { ...poller, clients: pollers(j) }))),
      settle: () => Promise.all(bulk.map((c) => c.call('closeAll'))),
    });
    const poll = pollRun.results;
    const pollFailures = sum(pollRun.reports.map((x) => x.failures));
    if (pollFailures > 0) poll.overload.push(`${pollFailures} polls failed`, ...pollRun.reports.flatMap((x) => x.unexpected.slice(0, 3)));

    await baseCounts();
    const body = JSON.stringify({ query: POLL, variables: { ids: watched(0) } });
    const fullLoad = (seconds: number) => runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: seconds, body });
    await fullLoad(2);
    const cpu0 = cpuSeconds(api.pid);
    const { rps, p99Ms, failures, requests } = await fullLoad(FULL_LOAD_S);
    const cpuPerRequestS = (cpuSeconds(api.pid) - cpu0) / Math.max(1, requests);
    if (failures > 0) poll.problems.push(`${failures} poll queries failed at full load`);
    log(`  poll query at full load (${FULL_LOAD_CONNECTIONS} connections, no likes): ${rps.toFixed(0)} req/s, p99 ${p99Ms} ms`);
    const pollAtFullLoad = { connections: FULL_LOAD_CONNECTIONS, rps, p99Ms, failures, cpuPerRequestS };
    const phases = [likesOnly, push, poll] as const;
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
  const openSeconds = (Date.now() - started) / 1000;
  log(`  push: ${n} sockets subscribed in ${openSeconds.toFixed(1)} s`);
  return { subscribed, openSeconds };
}
