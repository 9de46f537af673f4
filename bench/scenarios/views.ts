// Scenario "views" (docs/performance.md, "The bench"): server CPU per request of recordViews of a 20-post page against one like.
import { createAuth } from '../../src/auth/jwt.js';
import { firstSight, likeBody, sendAll } from '../lib/load.js';
import { cpuBetween, idle, readCpu } from '../lib/procStats.js';
import { columns, type Ratio, ratioLine, times } from '../lib/report.js';
import { deploymentRedis, range, type World, waitUntilPersisted } from '../lib/seed.js';
import { startDeployment } from '../lib/servers.js';

const [PAGE, CONNECTIONS, ROUNDS] = [20, 16, 3];
const FIRST_VIEWER = 100_000; // users Tally meets for this scenario (first sight before anything is timed)
const API_REDIS_TARGET = 1; // issue 27: a page of 20 views costs no more than one like
const RECORD = 'mutation Record($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted } } }';
type Part = 'api' | 'redis' | 'worker' | 'postgres';
const PARTS: Part[] = ['api', 'redis', 'worker', 'postgres'];

export async function runViewScenario(opts: { serverEnv: Record<string, string>; world: World; requests: number }) {
  const { world, serverEnv, requests } = opts;
  const deployment = await startDeployment(serverEnv);
  const redis = deploymentRedis(serverEnv);
  const pids = { ...deployment.pids, postgres: true };
  const auth = createAuth(serverEnv.JWT_SECRET!);
  // Every request by a user Tally has met, and every like and view one that counts: each round another like target and another page.
  const tokens = await Promise.all(range(FIRST_VIEWER, requests).map((id) => auth.sign(id)));
  const feed = [...world.expected.keys()].filter((id) => !world.likeTargetIds.includes(id)).map(String);
  const pageOf = (round: number) => feed.slice(round * PAGE, (round + 1) * PAGE);
  const settle = async () => {
    await waitUntilPersisted(redis.redis, redis.keys);
    for (const pid of [deployment.pids.api, deployment.pids.worker]) await idle(pid);
  };
  /** CPU µs per request of each part, the quiet deployment's own CPU over the same time taken off. */
  const measure = async (bodies: string[], quietPerS: Record<Part, number>) => {
    const before = readCpu(pids);
    const load = await sendAll(
      deployment.api.url,
      bodies.map((body, i) => ({ body, token: tokens[i]! })),
      CONNECTIONS,
    );
    await settle();
    const { windowS, ...used } = cpuBetween(before, readCpu(pids));
    if (load.failures > 0) throw new Error(`views: ${load.failures} requests failed`);
    return Object.fromEntries(PARTS.map((p) => [p, (((used[p] ?? 0) - quietPerS[p] * windowS) / requests) * 1e6])) as Record<Part, number>;
  };
  try {
    await firstSight(deployment.api.url, tokens);
    await settle();
    const quietStart = readCpu(pids);
    await new Promise((r) => setTimeout(r, 5000));
    const quiet = cpuBetween(quietStart, readCpu(pids));
    const quietPerS = Object.fromEntries(PARTS.map((p) => [p, (quiet[p] ?? 0) / quiet.windowS])) as Record<Part, number>;
    const rounds = [];
    for (let round = 0; round < ROUNDS; round++) {
      const target = world.likeTargetIds[round % world.likeTargetIds.length]!;
      const likes = () =>
        measure(
          tokens.map(() => likeBody(target)),
          quietPerS,
        );
      const views = () =>
        measure(
          tokens.map(() => JSON.stringify({ query: RECORD, variables: { ids: pageOf(round) } })),
          quietPerS,
        );
      // Alternate which goes first: the machine's drift falls on both. Then the same page again, inside every viewer's window.
      const first = round % 2 === 0 ? { like: await likes(), views: await views() } : { views: await views(), like: await likes() };
      rounds.push({ ...first, again: await views() });
    }
    return { requests, page: PAGE, rounds, quietPerS, method: 'docs/performance.md#the-bench' };
  } finally {
    redis.redis.disconnect();
    await deployment.stop();
  }
}

export type ViewResults = Awaited<ReturnType<typeof runViewScenario>>;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
type Measured = 'like' | 'views' | 'again';
const medianOf = (r: ViewResults, what: Measured, parts: readonly Part[]) =>
  median(r.rounds.map((round) => parts.reduce((sum, p) => sum + round[what][p], 0)));

export const viewRatios = (r: ViewResults): Ratio[] => {
  const path = (w: 'like' | 'views') => medianOf(r, w, ['api', 'redis']);
  const all = (w: 'like' | 'views') => medianOf(r, w, PARTS);
  return [
    {
      label: `Tally recordViews of ${r.page} posts / one like, API + Redis CPU`,
      value: path('views') / path('like'),
      target: API_REDIS_TARGET,
      atMost: true,
      detail: `${path('views').toFixed(0)} µs vs ${path('like').toFixed(0)} µs per request, median of ${r.rounds.length} rounds of ${r.requests}`,
    },
    {
      label: `Tally recordViews of ${r.page} posts / one like, all server CPU (+ worker, PostgreSQL)`,
      value: all('views') / all('like'),
      detail: `${all('views').toFixed(0)} µs vs ${all('like').toFixed(0)} µs per request (the quiet deployment's own CPU taken off)`,
    },
  ];
};

export function viewTable(r: ViewResults): string {
  const row = (name: string, what: Measured) => [
    name,
    ...PARTS.map((p) => median(r.rounds.map((round) => round[what][p])).toFixed(0)),
    medianOf(r, what, PARTS).toFixed(0),
  ];
  const table = columns(
    ['server CPU per request (µs, median of rounds)', 'API', 'Redis', 'worker', 'PostgreSQL', 'total'],
    [
      row('setLikeRelation: one like', 'like'),
      row(`recordViews: a page of ${r.page} posts, every view counted`, 'views'),
      row('recordViews: the same page again, inside the window (none counted)', 'again'),
    ],
    (i) => i >= 1,
  );
  const ratio = medianOf(r, 'views', PARTS) / medianOf(r, 'like', PARTS);
  return [table, `recordViews / like: ${times(ratio)} of all server CPU`, '', ...viewRatios(r).map(ratioLine)].join('\n');
}
