// Scenario "like throughput": distinct users liking a set of posts with the
// setLikeRelation mutation over HTTP, at a fixed concurrency, against Tally and against the
// PostgreSQL baseline (one transaction per like). Same requests, same order, same
// concurrency. Afterwards each side's counts must equal the distinct likes exactly.
import { runLoad, gql, type LoadResult } from '../lib/load.js';
import { LIKE_TARGET_POSTS, USERS, type World } from '../lib/seed.js';
import { startServer, type ServerHandle } from '../lib/servers.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { readLikeCounts, resetLikeTables } from '../baselines/pgLikes.js';

export const LIKE_CONNECTIONS = 32;
export const MAX_LIKES = USERS * LIKE_TARGET_POSTS;

const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const COUNTS = 'query Counts($ids: [ID!]!) { posts(ids: $ids) { id counts { likes } } }';

export interface LikeRun {
  name: string;
  load: LoadResult;
  /** Tally: Redis round trips and commands of the API connection per mutation, under load. */
  redisLoaded: { roundTrips: number; commands: number } | null;
  /** Responses that said `changed: true` (every like here is new, so all of them should). */
  changed: number;
  /** The final counts equal the distinct likes, post by post. */
  exact: boolean;
  /**
   * Tally: seconds from the last answer until the counters were exact, by the aggregator and
   * the scheduled 1 s flush (not forced). An upper bound when exact at the first look.
   */
  exactAfterS: number | null;
  exactAtFirstLook: boolean;
}

interface Pair {
  userId: number;
  postId: number;
}

/** Pair k: posts in turn, so the 32 requests in flight spread over every target post. */
function likePairs(world: World, count: number): Pair[] {
  return Array.from({ length: count }, (_, k) => ({
    postId: world.likeTargetIds[k % world.likeTargetIds.length]!,
    userId: world.userIds[Math.floor(k / world.likeTargetIds.length)]!,
  }));
}

function expectedCounts(world: World, pairs: readonly Pair[]): Map<number, number> {
  const expected = new Map<number, number>([[world.warmupPostId, USERS], ...world.likeTargetIds.map((id) => [id, 0] as [number, number])]);
  for (const { postId } of pairs) expected.set(postId, expected.get(postId)! + 1);
  return expected;
}

async function likeLoad(server: ServerHandle, world: World, pairs: readonly Pair[]): Promise<{ load: LoadResult; changed: number }> {
  let k = 0;
  let changed = 0;
  const load = await runLoad({
    url: server.url,
    connections: LIKE_CONNECTIONS,
    amount: pairs.length,
    next: () => {
      const { userId, postId } = pairs[k++]!;
      return {
        body: JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), active: true } } }),
        headers: { authorization: `Bearer ${world.tokens.get(userId)}` },
      };
    },
    onBody: (body) => {
      if (body.includes('"changed":true')) changed += 1;
    },
  });
  if (k !== pairs.length) throw new Error(`the load generator built ${k} requests for ${pairs.length} likes`);
  return { load, changed };
}

async function tallyCounts(server: ServerHandle, ids: number[]): Promise<Map<number, number>> {
  const { data } = await gql<{ posts: { id: string; counts: { likes: number } }[] }>(server.url, COUNTS, { ids: ids.map(String) });
  return new Map(data.posts.map((p) => [Number(p.id), p.counts.likes]));
}

const sameCounts = (a: Map<number, number>, b: Map<number, number>) => [...b].every(([id, n]) => a.get(id) === n);

export async function runLikeScenario(opts: { serverEnv: Record<string, string>; world: World; likes: number }) {
  const { world, serverEnv } = opts;
  const pairs = likePairs(world, Math.min(opts.likes, MAX_LIKES));
  // Warm-up: every user likes one other post once (connections, JIT, Tally's per-user caches).
  const warmup = world.userIds.map((userId) => ({ userId, postId: world.warmupPostId }));
  const expected = expectedCounts(world, pairs);
  const postIds = [...expected.keys()];
  const runs: LikeRun[] = [];

  type Verdict = Pick<LikeRun, 'exact' | 'exactAfterS' | 'exactAtFirstLook'>;
  type Verify = (server: ServerHandle, load: LoadResult) => Promise<Verdict>;
  const measure = async (name: string, kind: ServerKind, env: Record<string, string>, verify: Verify) => {
    const server = await startServer(kind, { ...serverEnv, ...env });
    try {
      await likeLoad(server, world, warmup);
      const before = await server.redisStats();
      const { load, changed } = await likeLoad(server, world, pairs);
      const after = await server.redisStats();
      const redisLoaded = before && after
        ? { roundTrips: (after.roundTrips - before.roundTrips) / load.requests, commands: (after.commands - before.commands) / load.requests }
        : null;
      const run: LikeRun = { name, load, changed, redisLoaded, ...(await verify(server, load)) };
      runs.push(run);
      console.log(`  ${name}: ${load.rps.toFixed(0)} likes/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms, exact: ${run.exact}`);
    } finally {
      await server.stop();
    }
  };

  // Tally as deployed by default (ROLE=all): the aggregator and the 1 s flush run alongside.
  await measure('Tally', 'tally', { ROLE: 'all' }, async (server, load) => {
    const since = () => (performance.now() - load.lastResponseAt) / 1000;
    // Counts are eventually consistent: first wait for the scheduled flush to catch up…
    for (let look = 0; since() < 10; look++) {
      if (sameCounts(await tallyCounts(server, postIds), expected)) return { exact: true, exactAfterS: since(), exactAtFirstLook: look === 0 };
      await new Promise((r) => setTimeout(r, 50));
    }
    // …then fold by hand, in case the scheduled flush is stuck: exact still, but not in time.
    await server.flush();
    return { exact: sameCounts(await tallyCounts(server, postIds), expected), exactAfterS: null, exactAtFirstLook: false };
  });

  const verifyPg = async () => {
    const counts = await readLikeCounts(serverEnv.DATABASE_URL!);
    const exact = [...expected].every(([id, n]) => counts.get(id)?.likeCount === n && counts.get(id)?.rows === n);
    return { exact, exactAfterS: null, exactAtFirstLook: false };
  };
  await resetLikeTables(serverEnv.DATABASE_URL!, postIds);
  await measure('PostgreSQL', 'pg-likes', {}, verifyPg);
  // Tally's answer does not wait for a disk write (unless Redis runs appendfsync always; see
  // machine.redis in the results), so also show PostgreSQL not waiting for its WAL fsync.
  await resetLikeTables(serverEnv.DATABASE_URL!, postIds);
  await measure('PostgreSQL, sync commit off', 'pg-likes', { BENCH_PG_SYNCHRONOUS_COMMIT: 'off' }, verifyPg);
  return { runs, likes: pairs.length, connections: LIKE_CONNECTIONS };
}
