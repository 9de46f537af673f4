// The live counts scenario's sockets: opened across the client processes (the timed ones in
// the first, interleaved with the others so they sit anywhere in the server's fan-out
// order), waited for until the server holds every subscription, summed up after the phase.
import { random, shuffled } from '../../prisma/random.js';
import type { LiveClients, SocketReport, SocketSpec } from '../lib/liveClients.js';
import { metric, metricsText } from '../lib/metrics.js';
import { range } from '../lib/seed.js';
import { QUIET_MS } from './liveMeasure.js';

const WATCH = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id counts { likes favs asOf } } }';
/** Sockets opened per round, across the client processes. */
const OPEN_BATCH = 500;
/** After the likes, the phase waits at most this long for its clients to go quiet. */
const WATCH_AFTER_MS = 30_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Opens `n` sockets, `timed` of them in clients[0]; resolves with the subscriptions the server holds and the seconds it took. */
export async function openSockets(
  apiUrl: string,
  clients: LiveClients[],
  n: number,
  timed: number,
  watched: (i: number) => string[],
  log: (line: string) => void,
) {
  const sampled = new Set(shuffled(range(0, n), random(15)).slice(0, timed));
  const bulk = clients.length - 1;
  const wsUrl = `${apiUrl.replace(/^http/, 'ws')}/graphql`;
  const started = Date.now();
  for (let from = 0; from < n; from += OPEN_BATCH) {
    const lists = clients.map((): SocketSpec[] => []);
    for (let i = from; i < Math.min(n, from + OPEN_BATCH); i++) {
      lists[sampled.has(i) ? 0 : 1 + (i % bulk)]!.push({ index: i, postIds: watched(i) });
    }
    await Promise.all(clients.map((c, k) => (lists[k]!.length > 0 ? c.open(wsUrl, WATCH, lists[k]!, k === 0) : 0)));
    const opened = Math.min(n, from + OPEN_BATCH);
    if (opened % 2000 === 0 || opened === n) log(`  push: ${opened}/${n} sockets open`);
  }
  const deadline = Date.now() + 60_000;
  let subscribed = metric(await metricsText(apiUrl), 'tally_live_subscriptions');
  while (!(subscribed >= n) && Date.now() < deadline) {
    await sleep(250);
    subscribed = metric(await metricsText(apiUrl), 'tally_live_subscriptions');
  }
  if (!(subscribed >= n)) throw new Error(`only ${subscribed} of ${n} subscriptions reached the server within 60 s`);
  return { subscribed, openSeconds: (Date.now() - started) / 1000 };
}

/** Resolves once no client has received anything for QUIET_MS (or after WATCH_AFTER_MS). */
export async function untilQuiet(clients: LiveClients[]) {
  const deadline = Date.now() + WATCH_AFTER_MS;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const total = (await Promise.all(clients.map((c) => c.mark()))).reduce((s, m) => s + m.pushes, 0);
    if (total !== last) {
      last = total;
      since = Date.now();
    } else if (Date.now() - since >= QUIET_MS) return;
    await sleep(250);
  }
}

/** The client processes' reports summed; silent sockets none of whose posts was liked had no push due. */
export function socketTotals(reports: SocketReport[], nothingLiked: (socket: number) => boolean) {
  const sum = (f: (x: SocketReport) => number) => reports.reduce((s, x) => s + f(x), 0);
  const silent = reports.flatMap((x) => x.silent);
  const nothingDue = silent.filter(nothingLiked).length;
  const closedByServer: Record<string, number> = {};
  for (const [code, count] of reports.flatMap((x) => Object.entries(x.closes))) closedByServer[code] = (closedByServer[code] ?? 0) + count;
  return {
    opened: sum((x) => x.sockets),
    openAtEnd: sum((x) => x.open),
    silent: silent.length - nothingDue,
    nothingDue,
    errors: sum((x) => x.errors),
    closedByServer,
  };
}

/** What the sockets' totals say went wrong (each fails the run). */
export function socketProblems(t: ReturnType<typeof socketTotals>, n: number, reports: SocketReport[]): string[] {
  return [
    ...(t.opened !== n ? [`${t.opened} of ${n} sockets opened`] : []),
    ...(t.openAtEnd !== n ? [`${n - t.openAtEnd} sockets closed: ${JSON.stringify(t.closedByServer)}`] : []),
    ...(t.silent > 0 ? [`${t.silent} sockets received no push`] : []),
    ...(t.errors > 0 ? [`${t.errors} unexpected messages`] : []),
    ...reports.flatMap((r) => r.unexpected.slice(0, 3)),
  ];
}

/** Closes every socket and waits until the API holds none (at most 30 s); resolves with how many closed. */
export async function closeSockets(apiUrl: string, clients: LiveClients[]): Promise<number> {
  const closed = (await Promise.all(clients.map((c) => c.closeAll()))).reduce((s, x) => s + x, 0);
  const deadline = Date.now() + 30_000;
  while (metric(await metricsText(apiUrl), 'tally_live_sockets') !== 0 && Date.now() < deadline) await sleep(250);
  return closed;
}
