// Scenario "runtimes": Tally's feed (pages of 20 and 50 posts) served by each Node binary of
// bench/lib/nodeBinaries.ts (Node 20 and Node 24 by default): the same compiled build, Node
// flags, seeded data and request, so only the runtime differs. Every server runs at once and
// the timed runs go round-robin (bench/scenarios/feedRounds.ts), as in the feed scenario.
import { type LoadResult, runLoad } from '../lib/load.js';
import type { NodeBinary } from '../lib/nodeBinaries.js';
import { type Ratio, type TableRow, times } from '../lib/report.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { checkedPage, FEED, FEED_CONNECTIONS, type FeedEdge, timeInRounds } from './feedRounds.js';

export const RUNTIME_PAGES = [20, 50] as const;

export interface RuntimeRun {
  /** `node --version` of the binary, and its path. */
  node: string;
  binary: string;
  page: number;
  /** All rounds together, as in FeedRun. */
  load: LoadResult;
  rounds: number[];
}

export async function runRuntimeScenario(opts: {
  serverEnv: Record<string, string>;
  world: World;
  binaries: readonly NodeBinary[];
  durationS: number;
  warmupS: number;
}) {
  const { world } = opts;
  const token = world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const reference = new Map<number, FeedEdge[]>();
  const servers: ServerHandle[] = [];
  try {
    for (const binary of opts.binaries) servers.push(await startServer('tally', { ...opts.serverEnv, ROLE: 'api' }, binary.path));
    const cases = [];
    // Page by page, so the runtimes of one page are timed back to back in every round.
    for (const page of RUNTIME_PAGES) {
      for (const [i, server] of servers.entries()) {
        const binary = opts.binaries[i]!;
        const expectBody = await checkedPage(server, `Tally on Node ${binary.version}`, page, world, token, reference);
        const body = JSON.stringify({ query: FEED, variables: { first: page } });
        // Not timed: lets V8 optimise the hot path on each runtime before the rounds.
        await runLoad({ url: server.url, connections: FEED_CONNECTIONS, durationS: opts.warmupS, body, headers });
        await server.settle();
        cases.push({ server, binary, page, label: `${binary.version} ${page}`, body, expectBody, rounds: [] });
      }
    }
    const timed = await timeInRounds(cases, opts.durationS, headers, true);
    return cases.map((c, i): RuntimeRun => ({ node: c.binary.version, binary: c.binary.path, page: c.page, ...timed[i]! }));
  } finally {
    for (const server of servers) await server.stop();
  }
}

/** Per page size, each runtime against the first one (the reference). */
function byPage(runs: readonly RuntimeRun[]) {
  return RUNTIME_PAGES.map((page) => {
    const [reference, ...others] = runs.filter((r) => r.page === page);
    if (!reference) throw new Error(`no runtime run of feed ${page}`);
    return { page, reference, others };
  });
}

export function runtimeRows(runs: readonly RuntimeRun[]): TableRow[] {
  return byPage(runs).flatMap(({ page, reference, others }) =>
    [reference, ...others].map((r) => ({
      scenario: `feed ${page}`,
      server: `Tally, Node ${r.node}`,
      ...r.load,
      check: 'same page',
      vs: r === reference ? 'reference' : `${times(r.load.rps / reference.load.rps)} Node ${reference.node}`,
    })),
  );
}

export function runtimeRatios(runs: readonly RuntimeRun[]): Ratio[] {
  return byPage(runs).flatMap(({ page, reference, others }) =>
    others.map((r) => ({
      label: `Tally feed ${page}, Node ${r.node} / Node ${reference.node}`,
      value: r.load.rps / reference.load.rps,
      // Each round's ratio too: on a noisy machine their spread says how far to trust the total.
      detail: `req/s; p99 ${r.load.p99Ms} ms vs ${reference.load.p99Ms} ms; rounds ${r.rounds.map((x, i) => times(x / reference.rounds[i]!)).join(', ')}`,
    })),
  );
}
