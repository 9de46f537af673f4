// Scenario "runtimes" (docs/performance.md, "Node 24 against Node 20"): Tally's feed served by
// each Node binary of bench/lib/nodeBinaries.ts, the same build, flags, data and request, so
// only the runtime differs; all servers at once, timed in round-robin rounds.
import type { NodeBinary } from '../lib/nodeBinaries.js';
import { type Ratio, type TableRow, times } from '../lib/report.js';
import { VIEWER_ID, type World } from '../lib/seed.js';
import { type ServerHandle, startServer } from '../lib/servers.js';
import { FEED, pageChecker, timeInRounds, versus, warmUp } from './serverRuns.js';

export const RUNTIME_PAGES = [20, 50] as const;
export type RuntimeRun = Awaited<ReturnType<typeof runRuntimeScenario>>[number];

export async function runRuntimeScenario(opts: {
  serverEnv: Record<string, string>;
  world: World;
  binaries: readonly NodeBinary[];
  durationS: number;
  warmupS: number;
}) {
  const token = opts.world.tokens.get(VIEWER_ID)!;
  const headers = { authorization: `Bearer ${token}` };
  const checkPage = pageChecker(opts.world, token);
  const servers: ServerHandle[] = [];
  try {
    for (const binary of opts.binaries) servers.push(await startServer('tally', { ...opts.serverEnv, ROLE: 'api' }, binary.path));
    const cases = [];
    // Page by page, so the runtimes of one page are timed back to back in every round.
    for (const page of RUNTIME_PAGES) {
      for (const [i, server] of servers.entries()) {
        const { version, path } = opts.binaries[i]!;
        const expectBody = await checkPage(server, `Tally on Node ${version}`, page);
        const body = JSON.stringify({ query: FEED, variables: { first: page } });
        await warmUp(server, body, headers, opts.warmupS);
        cases.push({ server, node: version, binary: path, page, label: `${version} ${page}`, body, expectBody });
      }
    }
    const timed = await timeInRounds(cases, opts.durationS, headers, true);
    return cases.map(({ node, binary, page }, i) => ({ node, binary, page, ...timed[i]! }));
  } finally {
    for (const server of servers) await server.stop();
  }
}

/** Per page size, each runtime against the first (the reference). */
const byPage = (runs: readonly RuntimeRun[]) =>
  RUNTIME_PAGES.map((page) => {
    const [reference, ...others] = runs.filter((r) => r.page === page);
    return { page, reference: reference!, others };
  });

export const runtimeRows = (runs: readonly RuntimeRun[]): TableRow[] =>
  byPage(runs).flatMap(({ page, reference, others }) =>
    [reference, ...others].map((r) => ({
      scenario: `feed ${page}`,
      server: `Tally, Node ${r.node}`,
      ...r.load,
      check: 'same page',
      vs: r === reference ? 'reference' : `${times(r.load.rps / reference.load.rps)} Node ${reference.node}`,
    })),
  );

// Each round's ratio too: on a noisy machine their spread says how far to trust the total.
export const runtimeRatios = (runs: readonly RuntimeRun[]): Ratio[] =>
  byPage(runs).flatMap(({ page, reference, others }) =>
    others.map((r) => {
      const rounds = r.rounds.map((x, i) => times(x / reference.rounds[i]!)).join(', ');
      return versus(`Tally feed ${page}, Node ${r.node} / Node ${reference.node}`, r.load, reference.load, undefined, `; rounds ${rounds}`);
    }),
  );
