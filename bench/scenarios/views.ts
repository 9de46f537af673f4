// Scenario "views" (docs/performance.md, "The bench" and "Views"): server CPU per request of recordViews of a 20-post page against one like.
import { setTimeout as sleep } from 'node:timers/promises';
import { createAuth } from '../../src/auth/jwt.js';
import { sum } from '../lib/freshness.js';
import { CONNECTIONS, firstSight, likeBody, ROUNDS, sendAll } from '../lib/load.js';
import { cpuBetween, idle, readCpu } from '../lib/procStats.js';
import { columns, type Ratio, ratioLine } from '../lib/report.js';
import { deploymentRedis, range, type World, waitUntilPersisted } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';

const PAGE = 20;
const FIRST_VIEWER = 100_000; // users Tally meets for this scenario only
// Issue 27: a page of 20 views costs the server no more CPU than one like; the server is every
// process a request costs: the API, Redis, the workers and PostgreSQL.
const SERVER_TARGET = 1;
const RECORD = 'mutation Record($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }';
const PARTS = ['api', 'redis', 'worker', 'postgres'] as const;
type Part = (typeof PARTS)[number];
const perPart = (f: (part: Part) => number) => Object.fromEntries(PARTS.map((p) => [p, f(p)])) as Record<Part, number>;
type Options = { serverEnv: Record<string, string>; world: World; requests: number };

export async function runViewScenario({ world, serverEnv, requests }: Options) {
  const deployment = await startDeployment(serverEnv);
  const { redis, keys } = deploymentRedis(serverEnv);
  const pids = { ...deployment.pids, postgres: true };
  const auth = createAuth(serverEnv.JWT_SECRET!);
  const tokens = await Promise.all(range(FIRST_VIEWER, requests).map((id) => auth.sign(id)));
  const feed = [...world.expected.keys()].filter((id) => !world.likeTargetIds.includes(id)).map(String);
  const settle = async () => {
    await waitUntilPersisted(redis, keys);
    for (const pid of [deployment.pids.api, deployment.pids.worker]) await idle(pid);
  };
  const cpuOver = async (work: () => Promise<unknown>) => {
    const before = readCpu(pids);
    await work();
    const { windowS, ...used } = cpuBetween(before, readCpu(pids));
    return { windowS, used: perPart((p) => used[p] ?? 0) };
  };
  try {
    await firstSight(deployment.api.url, tokens);
    await settle();
    const quiet = await cpuOver(() => sleep(5000));
    const quietPerS = perPart((p) => quiet.used[p] / quiet.windowS);
    /**
     * CPU µs per request of each part, the quiet deployment's own CPU over the same time taken off;
     * below zero (the quiet baseline is noise too) it counts as 0, which only makes a part dearer.
     */
    const measure = async (body: string) => {
      const { windowS, used } = await cpuOver(async () => {
        const sent = tokens.map((token) => ({ body, token }));
        const { failures } = await sendAll(deployment.api.url, sent, CONNECTIONS);
        await settle();
        if (failures > 0) throw new Error(`views: ${failures} requests failed`);
      });
      return perPart((p) => Math.max(0, ((used[p] - quietPerS[p] * windowS) / requests) * 1e6));
    };
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      const likes = () => measure(likeBody(world.likeTargetIds[round % world.likeTargetIds.length]!));
      const views = () => measure(JSON.stringify({ query: RECORD, variables: { ids: feed.slice(round * PAGE, (round + 1) * PAGE) } }));
      // Alternate which goes first: the machine's drift falls on both. Then the same page again, inside every viewer's window.
      const first = round % 2 === 0 ? { like: await likes(), views: await views() } : { views: await views(), like: await likes() };
      rounds.push({ ...first, again: await views() });
    }
    return { requests, page: PAGE, rounds, quietPerS, method: 'docs/performance.md#the-bench' };
  } finally {
    redis.disconnect();
    await deployment.stop();
  }
}

export type ViewResults = Awaited<ReturnType<typeof runViewScenario>>;
const ROWS = {
  like: 'setLikeRelation: one like',
  views: `recordViews: a page of ${PAGE} posts, every view counted`,
  again: 'recordViews: the same page again, inside the window (none counted)',
};
type Measured = keyof typeof ROWS;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const medianOf = (r: ViewResults, what: Measured, parts: readonly Part[] = PARTS) =>
  median(r.rounds.map((round) => sum(parts.map((p) => round[what][p]))));

export const viewRatios = (r: ViewResults): Ratio[] => {
  const [views, like] = [medianOf(r, 'views', ['api', 'redis']), medianOf(r, 'like', ['api', 'redis'])];
  const [allViews, allLike] = [medianOf(r, 'views'), medianOf(r, 'like')];
  const vs = (a: number, b: number) =>
    `${a.toFixed(0)} µs vs ${b.toFixed(0)} µs per request, median of ${r.rounds.length} rounds of ${r.requests}`;
  const label = `Tally recordViews of ${r.page} posts / one like`;
  return [
    { label: `${label}, server CPU`, value: allViews / allLike, target: SERVER_TARGET, atMost: true, detail: vs(allViews, allLike) },
    { label: `${label}, API + Redis CPU only`, value: views / like, detail: vs(views, like) },
  ];
};

export function viewTable(r: ViewResults): string {
  const cells = (what: Measured) => [...PARTS.map((p) => [p]), PARTS].map((parts) => medianOf(r, what, parts).toFixed(0));
  const rows = (Object.keys(ROWS) as Measured[]).map((what) => [ROWS[what], ...cells(what)]);
  const header = ['server CPU per request (µs, median of rounds, quiet CPU taken off)', 'API', 'Redis', 'worker', 'PostgreSQL', 'total'];
  return [columns(header, rows, (i) => i >= 1), '', ...viewRatios(r).map(ratioLine)].join('\n');
}
