// Scenario "hot post": N distinct users like ONE post with the setLikeRelation mutation
// over HTTP, as fast as a fixed-concurrency client can send, against Tally and against the
// PostgreSQL baseline (one transaction per like, every one on the same row). Same requests,
// same order, same concurrency. Measured per server: throughput and latency, exactness of
// the final count (must be N), and freshness — how long after its acknowledgement a
// client's read of the count includes a like (bench/lib/freshness.ts).

import { random, shuffled } from '../../prisma/random.js';
import { createAuth } from '../../src/auth/jwt.js';
import { readLikeCounts, resetLikeTables } from '../baselines/pgLikes.js';
import { type Freshness, graphqlReader, measureFreshness, startCountPoller } from '../lib/freshness.js';
import { gql, type LoadResult, runLoad } from '../lib/load.js';
import { USERS, type World } from '../lib/seed.js';
import type { ServerKind } from '../lib/serverProcess.js';
import { type ServerHandle, startServer } from '../lib/servers.js';

export const LIKE_CONNECTIONS = 32;
/** How long after the last acknowledgement the count may take to include every like. */
const WATCH_AFTER_S = 10;

const SET_LIKE = 'mutation Like($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const TALLY_COUNT = 'query Count($id: ID!) { post(id: $id) { counts { likes } } }';
const PG_COUNT = 'query Count($id: ID!) { likeCount(postId: $id) }';
const ANY = '{ __typename }';

export interface LikeRun {
  name: string;
  load: LoadResult;
  /**
   * Tally: Redis round trips and commands of the API connection per mutation, under load
   * (the count poller's reads, freshness.polls of them, go through it too).
   */
  redisLoaded: { roundTrips: number; commands: number } | null;
  /** Responses that said `changed: true` (every like here is new, so all of them should). */
  changed: number;
  /** The hot post's final count, read after the run (Tally: after a forced flush). */
  finalCount: number;
  /** The final count is N (PostgreSQL: like_count and the rows both). */
  exact: boolean;
  /** Seconds from the last acknowledgement until a poll answered N; null if none did in time. */
  exactAfterS: number | null;
  freshness: Freshness;
}

/** Users 1..N: the seed made 1..USERS; the rest are created on first sight by Tally (warm-up). */
async function tokensFor(world: World, jwtSecret: string, likes: number): Promise<string[]> {
  const auth = createAuth(jwtSecret);
  const tokens: string[] = [];
  for (let id = 1; id <= likes; id++) tokens.push(world.tokens.get(id) ?? (await auth.sign(id)));
  return tokens;
}

/** Sends every request (body + bearer token) once, in order, at full concurrency. */
function sendAll(server: ServerHandle, requests: readonly { body: string; token: string }[], onBody?: (body: string) => void) {
  let k = 0;
  return runLoad({
    url: server.url,
    connections: LIKE_CONNECTIONS,
    amount: requests.length,
    next: () => {
      const { body, token } = requests[k++]!;
      return { body, headers: { authorization: `Bearer ${token}` } };
    },
    ...(onBody && { onBody }),
  });
}

const likeBody = (postId: number) => JSON.stringify({ query: SET_LIKE, variables: { i: { postId: String(postId), active: true } } });

export async function runLikeScenario(opts: { serverEnv: Record<string, string>; world: World; likes: number }) {
  const { world, serverEnv } = opts;
  const n = opts.likes;
  const hotPostId = world.likeTargetIds[0]!;
  const tokens = await tokensFor(world, serverEnv.JWT_SECRET!, n);
  // A hot post is liked by users in no particular order (fixed seed: the same order everywhere).
  const order = shuffled(
    tokens.map((_, i) => i),
    random(8),
  );
  const likes = order.map((i) => ({ body: likeBody(hotPostId), token: tokens[i]! }));
  // Warm-up, not timed: every user's first request (Tally creates and caches the user, as on
  // any first sight), then the mutation path itself on another post.
  const firstSight = tokens.map((token) => ({ body: JSON.stringify({ query: ANY }), token }));
  const warmLikes = tokens.slice(0, USERS).map((token) => ({ body: likeBody(world.warmupPostId), token }));
  const runs: LikeRun[] = [];

  type Verdict = { finalCount: number; exact: boolean };
  const measure = async (
    name: string,
    kind: ServerKind,
    env: Record<string, string>,
    count: { query: string; pick: (data: any) => number },
    verify: (server: ServerHandle) => Promise<Verdict>,
  ) => {
    const server = await startServer(kind, { ...serverEnv, ...env });
    const reader = graphqlReader(server.url, count.query, { id: String(hotPostId) }, count.pick);
    try {
      await sendAll(server, firstSight);
      await sendAll(server, warmLikes);
      const baseCount = await reader.read();
      if (baseCount !== 0) throw new Error(`${name}: the hot post has ${baseCount} likes before the run`);

      const acks: number[] = [];
      const poller = startCountPoller(reader.read);
      const before = await server.redisStats();
      const load = await sendAll(server, likes, (body) => {
        if (body.includes('"changed":true')) acks.push(performance.now());
      });
      const after = await server.redisStats();
      // Keep polling until the count shows every like, or the watch ends.
      const lastAck = load.lastResponseAt;
      while (performance.now() - lastAck < WATCH_AFTER_S * 1000 && (poller.latest() ?? 0) < acks.length) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const polls = await poller.stop();
      const reachedN = polls.find((p) => p.count >= n);
      const freshness = measureFreshness(acks, polls, baseCount);

      const redisLoaded =
        before && after
          ? {
              roundTrips: (after.roundTrips - before.roundTrips) / load.requests,
              commands: (after.commands - before.commands) / load.requests,
            }
          : null;
      const run: LikeRun = {
        name,
        load,
        redisLoaded,
        changed: acks.length,
        exactAfterS: reachedN ? Math.max(0, reachedN.at - lastAck) / 1000 : null,
        ...(await verify(server)),
        freshness,
      };
      runs.push(run);
      const ms = (x: number | null) => (x === null ? '∞' : `${x.toFixed(0)} ms`);
      console.log(
        `  ${name}: ${load.rps.toFixed(0)} likes/s, p50 ${load.p50Ms} ms, p99 ${load.p99Ms} ms, failed ${load.failures}; ` +
          `count ${run.finalCount}/${n} (${run.exact ? 'exact' : 'NOT EXACT'}); ` +
          `fresh p50 ${ms(freshness.p50Ms)}, p99 ${ms(freshness.p99Ms)} (${freshness.polls} polls, ${freshness.included}/${freshness.acknowledgements} seen)`,
      );
    } finally {
      reader.close();
      await server.stop();
    }
  };

  // Tally as deployed by default (ROLE=all): the aggregator and the 1 s flush run alongside.
  const tallyCount = { query: TALLY_COUNT, pick: (d: any) => d.post.counts.likes as number };
  await measure('Tally', 'tally', { ROLE: 'all' }, tallyCount, async (server) => {
    // Fold whatever is pending by hand, so a count short of N is a lost like, not a slow flush.
    await server.flush();
    const { data } = await gql<{ post: { counts: { likes: number } } }>(server.url, TALLY_COUNT, { id: String(hotPostId) });
    const finalCount = data.post.counts.likes;
    return { finalCount, exact: finalCount === n };
  });

  const pgCount = { query: PG_COUNT, pick: (d: any) => d.likeCount as number };
  const verifyPg = async (): Promise<Verdict> => {
    const counts = await readLikeCounts(serverEnv.DATABASE_URL!);
    const hot = counts.get(hotPostId);
    const finalCount = hot?.likeCount ?? 0;
    return { finalCount, exact: finalCount === n && hot?.rows === n };
  };
  const pgPosts = [hotPostId, world.warmupPostId];
  await resetLikeTables(serverEnv.DATABASE_URL!, pgPosts);
  await measure('PostgreSQL', 'pg-likes', {}, pgCount, verifyPg);
  // Tally's answer does not wait for a disk write (unless Redis runs appendfsync always; see
  // machine.redis in the results), so also show PostgreSQL not waiting for its WAL fsync.
  await resetLikeTables(serverEnv.DATABASE_URL!, pgPosts);
  await measure('PostgreSQL, sync commit off', 'pg-likes', { BENCH_PG_SYNCHRONOUS_COMMIT: 'off' }, pgCount, verifyPg);
  return { runs, likes: n, hotPostId, connections: LIKE_CONNECTIONS, freshnessMethod: 'docs/performance.md#the-bench' };
}
