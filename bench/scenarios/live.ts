// Scenario "live counts": clients kept up to date with the counts of the posts they show,
// by GraphQL subscriptions over WebSocket (Tally's postCountsChanged) against polling the
// same counts over HTTP once a second. One Tally API process (ROLE=api) and one worker
// (ROLE=worker: aggregator and the 500 ms flush, which publishes changed posts), on a fresh
// database and key prefix with 100 posts, each process's CPU and RSS read from /proc. Likes
// arrive at a steady rate over HTTP (default 200/s), each a new (user, post) pair, in three
// phases of the same length, the API idle and the counts settled before each:
//   1. likes only: what the likes themselves cost the API (subtracted from the others);
//   2. push: N sockets (default 10,000), each subscribed to 20 of the 100 posts, all
//      subscribed before the likes start, closed after (the API's memory is measured before
//      and with them, while its heap holds little else);
//   3. poll: P pollers (default 200: what one API process sustains here beside the likes),
//      each asking for the same 20 posts' counts as the socket of its index once a second;
// then the poll query alone at full load (its lowest CPU per request, for the extrapolation
// of polling to N clients most favourable to polling).
// The load generator runs in child processes (bench/lib/liveClientProcess.ts): the sockets
// whose pushes are timed (200, a random sample, opened interleaved with the others so they
// sit anywhere in the server's fan-out order) in a process of their own, the others spread
// over BENCH_LIVE_CLIENT_PROCESSES processes; this process sends the likes and times their
// acknowledgements.
import { readFileSync } from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import { Redis } from 'ioredis';
import { random, shuffled } from '../../prisma/random.js';
import { createApp } from '../../src/app.js';
import { createAuth } from '../../src/auth/jwt.js';
import { loadConfig } from '../../src/config.js';
import { type BenchEnv, tallyEnv } from '../lib/env.js';
import { inclusionLags, percentile } from '../lib/freshness.js';
import { type LiveClients, type Mark, type PollReport, type SocketSpec, startLiveClients } from '../lib/liveClients.js';
import { gql, runLoad } from '../lib/load.js';
import { abandonAfter, openLoopAgent, postGraphql } from '../lib/openLoop.js';
import { cpuSeconds, machineSeconds, mainThreadWaitSeconds, openFilesLimit, rssBytes } from '../lib/procStats.js';
import { type ServerHandle, startServer } from '../lib/servers.js';

export const LIVE_POSTS = 100;
/** Posts each socket or poller watches. */
export const WATCHED = 20;
/** Sockets whose every push is timed. */
export const SAMPLED_SOCKETS = 200;
export const POLL_INTERVAL_MS = 1000;
/**
 * Most HTTP connections the likes go over at once. Likes are sent open loop, each at its time
 * as from independent users: a slow answer takes another connection instead of holding the
 * next like back, so a busy API sees the offered rate, not a rate its answers allow.
 */
const LIKE_CONNECTIONS = 1024;
/** Connections the first-sight warm-up uses. */
const WARMUP_CONNECTIONS = 32;
const WARMUP_S = 3;
/** Sockets opened per round, across the client processes (the sampled ones interleaved). */
const OPEN_BATCH = 500;
/** After the likes: a phase ends once no client received anything for this long (or after WATCH_AFTER_MS). */
const QUIET_MS = 2000;
const WATCH_AFTER_MS = 30_000;
/** How long after the last like is sent its answers may take before they are abandoned. */
const ANSWER_WAIT_MS = 30_000;
const AUTHORS = 10;
/** The poll query at full load (closed loop, autocannon): connections and seconds. */
const FULL_LOAD_CONNECTIONS = 16;
const FULL_LOAD_S = 5;
/**
 * Users FIRST_LIKER … FIRST_LIKER + LIKERS - 1 like: the j-th like of the run is user
 * FIRST_LIKER + j % LIKERS on post (j + ⌊j / LIKERS⌋) % 100, a (user, post) pair never liked
 * before for j < 100 × LIKERS (LIKERS + 1 and 100 are coprime), so every like changes a count
 * and each post's likes come from distinct users. Tally sees each liker once before the
 * timed phases (a first sight writes the user's row, which is not what is measured here).
 */
const FIRST_LIKER = 1000;
const LIKERS = 1000;

export const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes favs asOf } } }';
export const POLL = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';
const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';

export const LIVE_METHOD =
  'Push latency: for each of the sampled sockets (a random sample, opened interleaved with the rest, in a client process ' +
  'of their own) and each post it watches, the k-th like acknowledged on that post during the phase (HTTP response received ' +
  'by the bench, Date.now()) counts as delivered by the first push on that socket whose counts.likes minus the count before ' +
  'the phase is >= k; latency = arrival of that push (Date.now() in the client process) minus the acknowledgement, floored at ' +
  '0; fromSent* the same from the like being sent (an upper bound, honest when likes are answered late). Polling staleness is ' +
  'the same with polls (arrival of the answer) instead of pushes, over every poller. Likes never seen before the phase ended ' +
  'count as Infinity (null). Likes are sent open loop at the set rate, each a new (user, post) pair. Server CPU = utime + ' +
  'stime of a process from /proc/<pid>/stat over the window (first like sent to last like answered); the API\'s "net" CPU ' +
  "subtracts the likes-only phase's API CPU per like times the likes answered, leaving what serving the clients cost. " +
  'Updates: pushes received by the clients in the window, or for polling the posts whose likes in an answer received in the ' +
  "window differ from that poller's previous answer. RSS per client = (VmRSS of the API with every client connected, settled " +
  '3 s) minus (VmRSS before they connected), divided by the clients, both read right after a full garbage collection (the ' +
  'API runs with --expose-gc, and only the bench calls gc); live memory per client the same with V8 heapUsed + external.';

export interface LiveSettings {
  sockets: number;
  pollers: number;
  likesPerS: number;
  durationS: number;
  /** Processes holding the sockets that are not timed (the timed ones have one more). */
  clientProcesses: number;
  sampledSockets: number;
}

export function liveSettings(env: NodeJS.ProcessEnv = process.env): LiveSettings {
  const int = (name: string, fallback: number, max: number) => {
    const raw = env[name];
    const n = raw === undefined || raw === '' ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1 || n > max) throw new Error(`${name} must be an integer from 1 to ${max} (got "${raw}")`);
    return n;
  };
  // WS_MAX_CONNECTIONS_PER_CLIENT allows at most 100,000 sockets from one address.
  const sockets = int('BENCH_LIVE_SOCKETS', 10_000, 100_000);
  return {
    sockets,
    pollers: int('BENCH_LIVE_POLLERS', 200, 100_000),
    likesPerS: int('BENCH_LIVE_LIKES_PER_S', 200, 10_000),
    durationS: int('BENCH_LIVE_DURATION_S', 30, 3600),
    clientProcesses: int('BENCH_LIVE_CLIENT_PROCESSES', 2, 64),
    sampledSockets: Math.min(SAMPLED_SOCKETS, sockets),
  };
}

export interface Latency {
  /** (acknowledgement, watching client) pairs timed. */
  samples: number;
  included: number;
  /** Null = Infinity: some acknowledgements at or above this percentile were never seen. */
  p50Ms: number | null;
  p99Ms: number | null;
  maxMs: number | null;
  /**
   * The same from each like's request being sent instead of its acknowledgement: an upper
   * bound that stays honest when the API answers likes late (a push can then precede the
   * acknowledgement, and the latency from it reads low).
   */
  fromSentP50Ms: number | null;
  fromSentP99Ms: number | null;
}

export interface LikeLoad {
  sent: number;
  acknowledged: number;
  /** Failed, or not answered within ANSWER_WAIT_MS of the last like sent (then abandoned). */
  failures: number;
  /** Of the failures, those abandoned unanswered. */
  unanswered: number;
  /** Likes sent per second. */
  rps: number;
  p50Ms: number;
  p99Ms: number;
}

export interface LivePhase {
  mode: 'likes only' | 'push' | 'poll';
  /** Sockets or pollers. */
  clients: number;
  /** The phase's window, s: first like sent → last like answered (CPU, updates and requests are counted over it). */
  windowS: number;
  likes: LikeLoad;
  /**
   * CPU seconds over the window: the API (and net of the likes), the worker, Redis (null when
   * it is not a process of this machine), the load generator (this process and the client
   * processes), the whole machine busy, and stolen from it by the hypervisor; and how long
   * the API's main thread waited for a free core (other processes had them all).
   */
  cpu: {
    api: number;
    apiNet: number;
    worker: number;
    redis: number | null;
    generator: number;
    machine: number;
    steal: number;
    apiWaited: number;
  };
  /** Event loop utilisation of each client process over the window (1 = saturated). */
  clientLoops: { name: string; utilization: number }[];
  /** Count updates the clients received in the window (pushes; for polling, changed likes in answers). */
  updates: number;
  /** Poll requests answered in the window (polling only). */
  requests: number;
  /** Push latency or polling staleness; null for likes only. */
  latency: Latency | null;
  /**
   * API VmRSS before the clients connected, with them connected (settled), and at the window's
   * end; and its live memory (V8 heap used + external, after a full collection) before and with them.
   */
  rss: {
    beforeBytes: number;
    withClientsBytes: number;
    endBytes: number;
    perClientBytes: number;
    liveBeforeBytes: number;
    liveWithClientsBytes: number;
    livePerClientBytes: number;
  } | null;
  /** Every post's final count equals its count before the phase plus the likes acknowledged. */
  exact: boolean;
  /** What went wrong: counts off, sockets closed or never pushed to, unexpected messages (the run fails). */
  problems: string[];
  /**
   * What an overloaded API did to the load: likes or polls that failed or were abandoned
   * unanswered. Measured, shown, and not a failure of the run.
   */
  overload: string[];
}

export interface LiveResults {
  settings: LiveSettings;
  openFiles: { soft: number; hard: number };
  phases: LivePhase[];
  /**
   * The poll query (20 posts) at full load from FULL_LOAD_CONNECTIONS connections for
   * FULL_LOAD_S, no likes: API CPU per request at saturation, the lowest polling costs.
   */
  pollAtFullLoad: { connections: number; rps: number; p99Ms: number; failures: number; cpuPerRequestS: number };
  /** Push phase: what the sockets and the server reported. */
  sockets: {
    opened: number;
    subscribedOnServer: number;
    openAtEnd: number;
    /** Sockets that received no push although a post they watch was liked in the phase. */
    silent: number;
    /** Sockets none of whose posts was liked in the phase (at a low like rate): no push was due. */
    nothingDue: number;
    errors: number;
    closedByServer: Record<string, number>;
    openSeconds: number;
    /** From the API's /metrics over the phase and its tail (NaN, null in JSON, when /metrics did not answer). */
    serverPushes: number;
    serverDropped: number;
    /**
     * The server's own fan-out lag (flush pass published → push handed to the socket,
     * tally_live_fan_out_lag_seconds) at p50 and p99, as the upper bound of the histogram
     * bucket it falls in (ms; null past the last bound, 2.5 s).
     */
    serverFanOutP50Ms: number | null;
    serverFanOutP99Ms: number | null;
    /**
     * Pushes due over the window if the API kept up, roughly: each flush interval
     * (FLUSH_INTERVAL_MS) in which a post was liked (the likes as sent, answered or not) owes
     * one push to each socket watching it. With pushesDelivered (received in the window): how
     * far behind an overloaded API fell, and what keeping every socket current would cost (CPU
     * per push × pushes due).
     */
    pushesDue: number;
    pushesDelivered: number;
  };
  method: string;
}

const now = () => Date.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** 100 posts through Tally's store, their counters initialised (the seed's way), as ids. */
async function seedPosts(serverEnv: Record<string, string>): Promise<string[]> {
  const app = createApp(loadConfig({ ...serverEnv, ROLE: 'worker' }));
  await app.start();
  try {
    for (let id = 1; id <= AUTHORS; id++) await app.deps.users.ensure(id, `Author ${id}`);
    const ids: string[] = [];
    for (let i = 0; i < LIVE_POSTS; i++) {
      const { post } = await app.deps.posts.create(1 + (i % AUTHORS), `live post ${i}`, `Body of live post ${i}.`);
      await app.deps.postCounters.initialize(post.id);
      ids.push(String(post.id));
    }
    return ids;
  } finally {
    await app.stop();
  }
}

/** The likes of every post, read as a client would. */
async function readCounts(url: string, postIds: string[]): Promise<number[]> {
  const { data } = await gql<{ posts: { counts: { likes: number } }[] }>(url, POLL, { ids: postIds });
  return data.posts.map((p) => p.counts.likes);
}

interface Like {
  post: number;
  body: string;
  token: string;
}

/**
 * Sends `likes` at `rate` per second (open loop: each at its time, whatever the answers), over
 * up to LIKE_CONNECTIONS keep-alive connections, and waits for the answers, at most
 * ANSWER_WAIT_MS after the last like was sent (a like still unanswered then is abandoned and
 * counted as failed: whether it was applied is unknown). Resolves with each post's
 * acknowledgement times (and when those likes were sent) and failures.
 */
async function sendLikes(url: string, likes: Like[], rate: number) {
  const agent = openLoopAgent(LIKE_CONNECTIONS);
  const acks: number[][] = Array.from({ length: LIVE_POSTS }, () => []);
  /** When each acknowledged like was sent, per post. */
  const sends: number[][] = Array.from({ length: LIVE_POSTS }, () => []);
  /** When every like was sent, answered or not, per post. */
  const offered: number[][] = Array.from({ length: LIVE_POSTS }, () => []);
  /** Likes that failed or were not answered in time, per post (they may or may not count). */
  const failed = Array.from({ length: LIVE_POSTS }, () => 0);
  const latencies: number[] = [];
  const failures: string[] = [];
  const answers: Promise<void>[] = [];
  /** Requests still waiting for their answer (queued in the agent or sent). */
  const waiting = new Set<http.ClientRequest>();
  const started = now();
  const fire = async (like: Like) => {
    const sentAt = now();
    offered[like.post]!.push(sentAt);
    const why = await postGraphql({
      url,
      agent,
      waiting,
      body: like.body,
      token: like.token,
      isOk: (text) => text.includes('"changed":true'),
    });
    if (why === null) {
      const at = now();
      acks[like.post]!.push(at);
      sends[like.post]!.push(sentAt);
      latencies.push(at - sentAt);
    } else {
      failed[like.post]! += 1;
      failures.push(why.slice(0, 300));
    }
  };
  const lastSentAt = await new Promise<number>((resolve) => {
    let next = 0;
    const tick = () => {
      const due = Math.min(likes.length, Math.floor(((now() - started) * rate) / 1000) + 1);
      while (next < due) answers.push(fire(likes[next++]!));
      if (next < likes.length) setTimeout(tick, 5);
      else resolve(now());
    };
    tick();
  });
  const unanswered = await abandonAfter(answers, waiting, ANSWER_WAIT_MS, 'after the last like was sent');
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const load: LikeLoad = {
    sent: likes.length,
    acknowledged: latencies.length,
    failures: failures.length,
    unanswered,
    rps: likes.length / Math.max(0.001, (lastSentAt - started) / 1000),
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
  };
  return {
    acks: acks.map((a) => a.sort((x, y) => x - y)),
    sends: sends.map((a) => a.sort((x, y) => x - y)),
    offered,
    failed,
    failures,
    load,
  };
}

/** Σ over posts of (flush intervals since `from` in which the post was liked) × (sockets watching it). */
function pushesDue(likedAt: readonly number[][], watchers: readonly number[], from: number, intervalMs: number): number {
  return likedAt.reduce(
    (sum, times, post) => sum + new Set(times.map((t) => Math.floor((t - from) / intervalMs))).size * watchers[post]!,
    0,
  );
}

/** Resolves once the process has used less than 0.1 core over a second (at most `timeoutMs`). */
async function idle(pid: number, timeoutMs = 120_000): Promise<boolean> {
  const deadline = now() + timeoutMs;
  let last = cpuSeconds(pid);
  while (now() < deadline) {
    await sleep(1000);
    const cpu = cpuSeconds(pid);
    if (cpu - last < 0.1) return true;
    last = cpu;
  }
  return false;
}

/** The likes of every post once they stop moving (unchanged over QUIET_MS), at most `timeoutMs`. */
async function settledCounts(url: string, postIds: string[], timeoutMs = 60_000): Promise<number[]> {
  const deadline = now() + timeoutMs;
  let counts: number[] | null = null;
  let since = now();
  let failure: unknown = null;
  while (now() < deadline) {
    // A read an overloaded API fails is retried until the deadline.
    const next = await readCounts(url, postIds).catch((error: unknown) => {
      failure = error;
      return null;
    });
    if (next && (!counts || next.some((c, i) => c !== counts![i]))) {
      counts = next;
      since = now();
    } else if (next && now() - since >= QUIET_MS) return counts!;
    await sleep(250);
  }
  throw new Error(
    counts ? `the counts kept moving for ${timeoutMs} ms` : `the counts could not be read within ${timeoutMs} ms: ${String(failure)}`,
  );
}

/** Where the CPU went over a window, in cores. */
function coresLine(cpu: LivePhase['cpu'], windowS: number): string {
  const c = (x: number | null) => (x === null ? '-' : (x / windowS).toFixed(2));
  return `cores: API ${c(cpu.api)} (its main thread waited for a core ${c(cpu.apiWaited)} of the time), worker ${c(cpu.worker)}, Redis ${c(cpu.redis)}, load generator ${c(cpu.generator)}, machine ${c(cpu.machine)} of ${os.cpus().length} (stolen ${c(cpu.steal)})`;
}

const round1 = (x: number) => (Number.isFinite(x) ? Number(x.toFixed(1)) : null);

function latencyOf(lags: number[], fromSent: number[]): Latency {
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

/**
 * The API's /metrics, or null when it does not answer within 30 s (an API overloaded by its
 * pushes answers HTTP late; the bench goes on without the server's own counts).
 */
async function metricsText(url: string): Promise<string | null> {
  try {
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) });
    return res.ok ? await res.text() : null;
  } catch {
    return null;
  }
}

/** A gauge or counter summed over its labels (0 when absent; NaN without metrics). */
function metric(text: string | null, name: string): number {
  if (text === null) return Number.NaN;
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(match[1]);
  return sum;
}

/** The buckets of a histogram: upper bound (s) → cumulative count (empty without metrics). */
function histogram(text: string | null, name: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const match of (text ?? '').matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))) {
    buckets.set(match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]), Number(match[2]));
  }
  return buckets;
}

/** The bucket bound (ms) below which `p` % of the observations between two readings fall. */
function bucketPercentile(before: Map<number, number>, after: Map<number, number>, p: number): number | null {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const total = (after.get(Number.POSITIVE_INFINITY) ?? 0) - (before.get(Number.POSITIVE_INFINITY) ?? 0);
  if (total <= 0) return null;
  for (const bound of bounds) {
    if ((after.get(bound) ?? 0) - (before.get(bound) ?? 0) >= (p / 100) * total) return Number.isFinite(bound) ? bound * 1000 : null;
  }
  return null;
}

interface Snapshot {
  at: number;
  api: number;
  apiWaited: number;
  worker: number;
  redis: number | null;
  generator: number;
  machine: { busy: number; steal: number };
  marks: Mark[];
}

/** The pid of the Redis server at `url` when it runs on this machine (its INFO process_id is a redis process here). */
async function localRedisPid(url: string): Promise<number | null> {
  const redis = new Redis(url, { lazyConnect: true });
  try {
    await redis.connect();
    const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
    return pid > 0 && /redis/.test(readFileSync(`/proc/${pid}/comm`, 'utf8')) ? pid : null;
  } catch {
    return null;
  } finally {
    redis.disconnect();
  }
}

export async function runLiveScenario(opts: { env: BenchEnv; settings: LiveSettings; log: (line: string) => void }): Promise<LiveResults> {
  const { settings, log } = opts;
  const { sockets: n, pollers: p, likesPerS: rate, durationS } = settings;
  const serverEnv: Record<string, string> = {
    ...tallyEnv(opts.env),
    // Every socket comes from 127.0.0.1 (the per-address limit is 10 by default), and they
    // all count as connections of the HTTP server.
    WS_MAX_CONNECTIONS_PER_CLIENT: '100000',
    HTTP_MAX_CONNECTIONS: '1000000',
  };
  const openFiles = openFilesLimit();
  const postIds = await seedPosts(serverEnv);
  const watched = (i: number) => Array.from({ length: WATCHED }, (_, m) => postIds[(i + m) % LIVE_POSTS]!);
  /** Sockets watching each post. */
  const watchers = Array.from({ length: LIVE_POSTS }, () => 0);
  for (let i = 0; i < n; i++) for (let m = 0; m < WATCHED; m++) watchers[(i + m) % LIVE_POSTS]! += 1;
  const { flushIntervalMs } = loadConfig(serverEnv);
  const postIndex = new Map(postIds.map((id, i) => [Number(id), i]));
  const auth = createAuth(serverEnv.JWT_SECRET!);
  const tokens: string[] = [];
  for (let u = 0; u < LIKERS; u++) tokens.push(await auth.sign(FIRST_LIKER + u));
  let nextLike = 0;
  const likesFor = (count: number): Like[] => {
    if (nextLike + count > LIKERS * LIVE_POSTS) throw new Error(`at most ${LIKERS * LIVE_POSTS} likes per run`);
    return Array.from({ length: count }, () => {
      const j = nextLike++;
      const post = (j + Math.floor(j / LIKERS)) % LIVE_POSTS;
      return {
        post,
        token: tokens[j % LIKERS]!,
        body: JSON.stringify({ query: SET_LIKE, variables: { i: { postId: postIds[post], active: true } } }),
      };
    });
  };

  const started: { servers: ServerHandle[]; clients: LiveClients[] } = { servers: [], clients: [] };
  try {
    const worker = await startServer('tally', { ...serverEnv, ROLE: 'worker' });
    started.servers.push(worker);
    // --expose-gc: the bench collects garbage before it reads the API's live memory (nothing else calls gc).
    const api = await startServer('tally', { ...serverEnv, ROLE: 'api' }, process.execPath, n + p + LIKE_CONNECTIONS + 1024, [
      '--expose-gc',
    ]);
    started.servers.push(api);
    const sampler = await startLiveClients('timed sockets', settings.sampledSockets + 256);
    started.clients.push(sampler);
    const bulk: LiveClients[] = [];
    for (let k = 0; k < settings.clientProcesses; k++) {
      const share = Math.ceil(Math.max(n, p) / settings.clientProcesses);
      bulk.push(await startLiveClients(`clients ${k + 1}`, share + 256));
    }
    started.clients.push(...bulk);
    const clients = [sampler, ...bulk];

    const redisPid = await localRedisPid(serverEnv.REDIS_URL!);
    /** The API's live memory: V8 heap in use and memory outside it (buffers), after a full collection. */
    const liveBytes = async () => {
      const m = await api.memory();
      if (!m.collected) throw new Error('the API was started without --expose-gc');
      return m.heapUsed + m.external;
    };
    const snapshot = async (): Promise<Snapshot> => {
      const marks = await Promise.all(clients.map((c) => c.mark()));
      const { user, system } = process.cpuUsage();
      return {
        at: now(),
        api: cpuSeconds(api.pid),
        apiWaited: mainThreadWaitSeconds(api.pid),
        worker: cpuSeconds(worker.pid),
        redis: redisPid === null ? null : cpuSeconds(redisPid),
        generator: (user + system) / 1e6 + clients.reduce((s, c) => s + cpuSeconds(c.pid), 0),
        machine: machineSeconds(),
        marks,
      };
    };
    /** API CPU seconds per like answered in the likes-only phase (its idle share included). */
    let likesOnlyApiCpuPerLike = 0;

    /**
     * One phase's likes at the steady rate, with CPU and client marks at both ends of its
     * window: from the first like sent to the last like answered, so a phase whose likes the
     * API answers late still counts all of their work.
     */
    const likePhase = async (base: number[]) => {
      const likes = likesFor(Math.round(rate * durationS));
      const before = await snapshot();
      const { acks, sends, offered, failed, load, failures } = await sendLikes(api.url, likes, rate);
      const after = await snapshot();
      const windowS = (after.at - before.at) / 1000;
      const apiCpu = after.api - before.api;
      return {
        base,
        acks,
        sends,
        offered,
        failed,
        load,
        failures,
        before,
        after,
        windowS,
        cpu: {
          api: apiCpu,
          apiNet: apiCpu - likesOnlyApiCpuPerLike * load.acknowledged,
          worker: after.worker - before.worker,
          redis: after.redis === null || before.redis === null ? null : after.redis - before.redis,
          generator: after.generator - before.generator,
          machine: after.machine.busy - before.machine.busy,
          steal: after.machine.steal - before.machine.steal,
          apiWaited: after.apiWaited - before.apiWaited,
        },
        clientLoops: clients.map((c, i) => {
          const a = before.marks[i]!.loop;
          const b = after.marks[i]!.loop;
          const active = b.active - a.active;
          return { name: c.name, utilization: Number((active / Math.max(1e-9, active + b.idle - a.idle)).toFixed(3)) };
        }),
      };
    };
    /** Resolves once no client has received anything for QUIET_MS (or after WATCH_AFTER_MS). */
    const quiet = async () => {
      const deadline = now() + WATCH_AFTER_MS;
      let last = -1;
      let since = now();
      while (now() < deadline) {
        const total = (await Promise.all(clients.map((c) => c.mark()))).reduce((s, m) => s + m.pushes, 0);
        if (total !== last) {
          last = total;
          since = now();
        } else if (now() - since >= QUIET_MS) return;
        await sleep(250);
      }
    };
    const phases: LivePhase[] = [];
    /** The counts before a phase, once the API is idle and the counts stopped moving. */
    const baseCounts = async () => {
      if (!(await idle(api.pid))) log('  (the API did not become idle within 120 s)');
      return settledCounts(api.url, postIds);
    };
    /**
     * After a phase: every post's count is its count before plus the likes acknowledged, plus
     * at most the likes whose answer failed or was abandoned (they may or may not have counted).
     */
    const verify = async (r: Awaited<ReturnType<typeof likePhase>>) => {
      const problems: string[] = [];
      const overload: string[] = [];
      if (r.load.failures > 0) {
        overload.push(
          `${r.load.failures} likes failed (${r.load.unanswered} of them unanswered ${ANSWER_WAIT_MS / 1000} s after the last was sent), first: ${r.failures[0]}`,
        );
      }
      try {
        const counts = await settledCounts(api.url, postIds);
        const off = counts.flatMap((c, i) => {
          const least = r.base[i]! + r.acks[i]!.length;
          return c >= least && c <= least + r.failed[i]!
            ? []
            : [`post ${postIds[i]}: ${c}, expected ${least}${r.failed[i] ? ` to ${least + r.failed[i]!}` : ''}`];
        });
        if (off.length > 0) problems.push(`counts off: ${off.slice(0, 5).join('; ')}`);
        return { exact: off.length === 0, problems, overload };
      } catch (error) {
        return { exact: false, problems: [...problems, (error as Error).message], overload };
      }
    };

    // Warm-up, not timed: every liker's first sight, the like path and the flush, then settled counts.
    let k = 0;
    const firstSight = await runLoad({
      url: api.url,
      connections: WARMUP_CONNECTIONS,
      amount: LIKERS,
      next: () => ({ body: JSON.stringify({ query: '{ __typename }' }), headers: { authorization: `Bearer ${tokens[k++ % LIKERS]}` } }),
    });
    if (firstSight.failures > 0) throw new Error(`${firstSight.failures} first-sight requests failed`);
    log(`  warm-up: ${LIKERS} likers seen once, then ${WARMUP_S} s of likes at ${rate}/s`);
    const warmed = await sendLikes(api.url, likesFor(rate * WARMUP_S), rate);
    if (warmed.failures.length > 0) throw new Error(`warm-up likes failed: ${warmed.failures[0]}`);

    // 1. Likes only.
    {
      const r = await likePhase(await baseCounts());
      likesOnlyApiCpuPerLike = r.cpu.api / Math.max(1, r.load.acknowledged);
      r.cpu.apiNet = 0;
      const { exact, problems, overload } = await verify(r);
      phases.push({
        mode: 'likes only',
        clients: 0,
        windowS: r.windowS,
        likes: r.load,
        cpu: r.cpu,
        clientLoops: r.clientLoops,
        updates: 0,
        requests: 0,
        latency: null,
        rss: null,
        exact,
        problems,
        overload,
      });
      log(`  likes only: ${r.load.rps.toFixed(0)} likes/s, p99 ${r.load.p99Ms} ms; ${coresLine(r.cpu, r.windowS)}`);
    }

    // 2. Push: N sockets, all subscribed before the likes start.
    let socketsResult: LiveResults['sockets'];
    {
      await idle(api.pid);
      const liveBefore = await liveBytes();
      const rssBefore = rssBytes(api.pid);
      const order = shuffled(
        Array.from({ length: n }, (_, i) => i),
        random(15),
      );
      const timed = new Set(order.slice(0, settings.sampledSockets));
      const wsUrl = `${api.url.replace(/^http/, 'ws')}/graphql`;
      const openStarted = now();
      let opened = 0;
      for (let from = 0; from < n; from += OPEN_BATCH) {
        const lists: SocketSpec[][] = clients.map(() => []);
        for (let i = from; i < Math.min(n, from + OPEN_BATCH); i++) {
          lists[timed.has(i) ? 0 : 1 + (i % bulk.length)]!.push({ index: i, postIds: watched(i) });
        }
        await Promise.all(clients.map((c, k) => (lists[k]!.length > 0 ? c.open(wsUrl, WATCH, lists[k]!, k === 0) : 0)));
        opened = Math.min(n, from + OPEN_BATCH);
        if (opened % 2000 === 0 || opened === n) log(`  push: ${opened}/${n} sockets open`);
      }
      const deadline = now() + 60_000;
      let subscribed = metric(await metricsText(api.url), 'tally_live_subscriptions');
      while (!(subscribed >= n) && now() < deadline) {
        await sleep(250);
        subscribed = metric(await metricsText(api.url), 'tally_live_subscriptions');
      }
      const openSeconds = (now() - openStarted) / 1000;
      if (!(subscribed >= n)) throw new Error(`only ${subscribed} of ${n} subscriptions reached the server within 60 s`);
      await sleep(3000);
      const liveWith = await liveBytes();
      const rssWith = rssBytes(api.pid);
      log(
        `  push: ${n} sockets subscribed in ${openSeconds.toFixed(1)} s; API RSS ${(rssBefore / 2 ** 20).toFixed(0)} → ${(rssWith / 2 ** 20).toFixed(0)} MiB, live heap + external ${(liveBefore / 2 ** 20).toFixed(0)} → ${(liveWith / 2 ** 20).toFixed(0)} MiB (after a full GC)`,
      );
      const metricsBefore = await metricsText(api.url);

      const r = await likePhase(await baseCounts());
      const rssEnd = rssBytes(api.pid);
      await quiet();
      const updates = r.after.marks.reduce((s, m) => s + m.pushes, 0) - r.before.marks.reduce((s, m) => s + m.pushes, 0);
      const reports = await Promise.all(clients.map((c) => c.sockets()));
      const lags: number[] = [];
      const fromSent: number[] = [];
      for (const record of reports[0]!.records) {
        const byPost = new Map<number, { at: number; count: number }[]>();
        for (let q = 0; q < record.pushes.length; q += 3) {
          const post = postIndex.get(record.pushes[q]!)!;
          const list = byPost.get(post) ?? [];
          list.push({ count: record.pushes[q + 1]!, at: record.pushes[q + 2]! });
          byPost.set(post, list);
        }
        for (const id of record.postIds) {
          const post = postIndex.get(Number(id))!;
          lags.push(...inclusionLags(r.acks[post]!, byPost.get(post) ?? [], r.base[post]!));
          fromSent.push(...inclusionLags(r.sends[post]!, byPost.get(post) ?? [], r.base[post]!));
        }
      }
      const metricsAfter = await metricsText(api.url);
      const fanOutBefore = histogram(metricsBefore, 'tally_live_fan_out_lag_seconds');
      const fanOutAfter = histogram(metricsAfter, 'tally_live_fan_out_lag_seconds');
      const sum = (f: (x: (typeof reports)[number]) => number) => reports.reduce((s, x) => s + f(x), 0);
      const silent = reports.flatMap((x) => x.silent);
      const nothingDue = silent.filter((i) => watched(i).every((id) => r.acks[postIndex.get(Number(id))!]!.length === 0)).length;
      const closedByServer: Record<string, number> = {};
      for (const report of reports)
        for (const [code, count] of Object.entries(report.closes)) closedByServer[code] = (closedByServer[code] ?? 0) + count;
      socketsResult = {
        opened: sum((x) => x.sockets),
        subscribedOnServer: subscribed,
        openAtEnd: sum((x) => x.open),
        silent: silent.length - nothingDue,
        nothingDue,
        errors: sum((x) => x.errors),
        closedByServer,
        openSeconds,
        serverPushes: metric(metricsAfter, 'tally_live_pushes_total') - metric(metricsBefore, 'tally_live_pushes_total'),
        serverDropped: metric(metricsAfter, 'tally_live_pushes_dropped_total') - metric(metricsBefore, 'tally_live_pushes_dropped_total'),
        serverFanOutP50Ms: bucketPercentile(fanOutBefore, fanOutAfter, 50),
        serverFanOutP99Ms: bucketPercentile(fanOutBefore, fanOutAfter, 99),
        pushesDue: pushesDue(r.offered, watchers, r.before.at, flushIntervalMs),
        pushesDelivered: updates,
      };
      // Sockets closed, and whatever the API still had to do done, before the counts are checked.
      const closed = (await Promise.all(clients.map((c) => c.closeAll()))).reduce((s, x) => s + x, 0);
      const closeDeadline = now() + 30_000;
      while (metric(await metricsText(api.url), 'tally_live_sockets') !== 0 && now() < closeDeadline) await sleep(250);
      log(`  push: ${closed} sockets closed`);
      await idle(api.pid);
      const { exact, problems, overload } = await verify(r);
      if (socketsResult.opened !== n) problems.push(`${socketsResult.opened} of ${n} sockets opened`);
      if (socketsResult.openAtEnd !== n) problems.push(`${n - socketsResult.openAtEnd} sockets closed: ${JSON.stringify(closedByServer)}`);
      if (socketsResult.silent > 0) problems.push(`${socketsResult.silent} sockets received no push`);
      if (socketsResult.errors > 0) problems.push(`${socketsResult.errors} unexpected messages`);
      for (const report of reports) problems.push(...report.unexpected.slice(0, 3));
      const latency = latencyOf(lags, fromSent);
      phases.push({
        mode: 'push',
        clients: n,
        windowS: r.windowS,
        likes: r.load,
        cpu: r.cpu,
        clientLoops: r.clientLoops,
        updates,
        requests: 0,
        latency,
        rss: {
          beforeBytes: rssBefore,
          withClientsBytes: rssWith,
          endBytes: rssEnd,
          perClientBytes: (rssWith - rssBefore) / n,
          liveBeforeBytes: liveBefore,
          liveWithClientsBytes: liveWith,
          livePerClientBytes: (liveWith - liveBefore) / n,
        },
        exact,
        problems,
        overload,
      });
      log(
        `  push: ${(updates / r.windowS).toFixed(0)} pushes/s to ${n} sockets (${socketsResult.pushesDue} due in the window, ${updates} received; server: ${socketsResult.serverPushes} handed out, ${socketsResult.serverDropped} replaced by newer, fan-out p50 ≤ ${socketsResult.serverFanOutP50Ms} ms, p99 ≤ ${socketsResult.serverFanOutP99Ms} ms); ` +
          `latency p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms (${latency.included}/${latency.samples} seen); likes p99 ${r.load.p99Ms} ms; ` +
          `${coresLine(r.cpu, r.windowS)}; client loops ${r.clientLoops.map((c) => c.utilization).join(', ')}`,
      );
    }

    // 3. Polling: P pollers, once a second each, the same 20 posts as the sockets.
    {
      const base = await baseCounts();
      const liveBefore = await liveBytes();
      const rssBefore = rssBytes(api.pid);
      const pollers = Array.from({ length: p }, (_, i) => ({ index: i, postIds: watched(i) }));
      await Promise.all(
        bulk.map((c, k) =>
          c.startPolling(
            api.url,
            POLL,
            pollers.filter((x) => x.index % bulk.length === k),
            POLL_INTERVAL_MS,
          ),
        ),
      );
      await sleep(3000);
      const liveWith = await liveBytes();
      const rssWith = rssBytes(api.pid);
      const r = await likePhase(base);
      const rssEnd = rssBytes(api.pid);
      await sleep(POLL_INTERVAL_MS + 2000); // the last likes flushed and polled
      const reports: PollReport[] = await Promise.all(bulk.map((c) => c.stopPolling()));
      const lags: number[] = [];
      const fromSent: number[] = [];
      let updates = 0;
      let requests = 0;
      const width = 2 + WATCHED;
      for (const report of reports) {
        for (const record of report.records) {
          const posts = record.postIds.map((id) => postIndex.get(Number(id))!);
          const last = posts.map((post) => r.base[post]!);
          const seen: { at: number; count: number }[][] = posts.map(() => []);
          for (let q = 0; q < record.polls.length; q += width) {
            const at = record.polls[q + 1]!;
            const inWindow = at >= r.before.at && at <= r.after.at;
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
      }
      const { exact, problems, overload } = await verify(r);
      const pollFailures = reports.reduce((s, x) => s + x.failures, 0);
      if (pollFailures > 0) overload.push(`${pollFailures} polls failed`, ...reports.flatMap((x) => x.unexpected.slice(0, 3)));
      const latency = latencyOf(lags, fromSent);
      phases.push({
        mode: 'poll',
        clients: p,
        windowS: r.windowS,
        likes: r.load,
        cpu: r.cpu,
        clientLoops: r.clientLoops.slice(1),
        updates,
        requests,
        latency,
        rss: {
          beforeBytes: rssBefore,
          withClientsBytes: rssWith,
          endBytes: rssEnd,
          perClientBytes: (rssWith - rssBefore) / p,
          liveBeforeBytes: liveBefore,
          liveWithClientsBytes: liveWith,
          livePerClientBytes: (liveWith - liveBefore) / p,
        },
        exact,
        problems,
        overload,
      });
      log(
        `  poll: ${(requests / r.windowS).toFixed(0)} polls/s from ${p} pollers; staleness p50 ${latency.p50Ms} ms, p99 ${latency.p99Ms} ms; ` +
          `${coresLine(r.cpu, r.windowS)}; client loops ${r.clientLoops
            .slice(1)
            .map((c) => c.utilization)
            .join(', ')}`,
      );
    }

    // 4. The poll query at full load, no likes: its cheapest CPU per request (a busy server
    // shares work between requests), the polling cost most favourable to polling.
    let pollAtFullLoad: LiveResults['pollAtFullLoad'];
    {
      await baseCounts();
      const body = JSON.stringify({ query: POLL, variables: { ids: watched(0) } });
      await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: 2, body });
      const cpu0 = cpuSeconds(api.pid);
      const load = await runLoad({ url: api.url, connections: FULL_LOAD_CONNECTIONS, durationS: FULL_LOAD_S, body });
      const cpu = cpuSeconds(api.pid) - cpu0;
      pollAtFullLoad = {
        connections: FULL_LOAD_CONNECTIONS,
        rps: load.rps,
        p99Ms: load.p99Ms,
        failures: load.failures,
        cpuPerRequestS: cpu / Math.max(1, load.requests),
      };
      if (load.failures > 0) phases.find((x) => x.mode === 'poll')!.problems.push(`${load.failures} poll queries failed at full load`);
      log(
        `  poll query at full load (${FULL_LOAD_CONNECTIONS} connections, no likes): ${load.rps.toFixed(0)} req/s, ${(pollAtFullLoad.cpuPerRequestS * 1e6).toFixed(0)} µs of API CPU per request`,
      );
    }

    return { settings, openFiles, phases, sockets: socketsResult, pollAtFullLoad, method: LIVE_METHOD };
  } finally {
    // Sockets first (their processes terminate them), then the servers.
    for (const c of started.clients) await c.stop();
    for (const server of started.servers.reverse()) await server.stop();
  }
}
