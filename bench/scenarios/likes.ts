// Scenario "hot post" (docs/performance.md, "The bench"): N distinct users like ONE post (and, on Tally, react to another).
import { random, shuffled } from '../../prisma/random.js';
import { createAuth } from '../../src/auth/jwt.js';
import { KINDS } from '../../src/domain/kinds.js';
import { countLikeRows, resetLikeTables } from '../baselines/pgLikes.js';
import { graphqlReader, measureFreshness, startCountPoller } from '../lib/freshness.js';
import { changed, firstSight, likeBody, redisPerRequest, sendAll } from '../lib/load.js';
import { type Ratio, redisCells, type TableRow, times, versus } from '../lib/report.js';
import { deploymentRedis, range, USERS, type World, waitUntilPersisted } from '../lib/seed.js';
import { startServer } from '../lib/servers.js';

const LIKE_CONNECTIONS = 32;
const WATCH_AFTER_S = 10; // how long after the last acknowledgement the count may take to include every like
const [THROUGHPUT_TARGET, FRESHNESS_P99_TARGET_MS] = [3, 1000]; // issue 8
const REACTION_TARGET = 0.9; // a reaction is as fast as a like: ≥ 0.9× Tally's likes/s

const SET_REACTION = 'mutation React($i: SetReactionInput!) { setReaction(input: $i) { changed } }';
/** User i's reaction: the registry's reaction i % 8, mixed kinds on one post. */
const reactionBody = (postId: number, i: number) => {
  const content = KINDS.reactions[i % KINDS.reactions.length]!.reaction!.content;
  return JSON.stringify({ query: SET_REACTION, variables: { i: { postId: String(postId), content, active: true } } });
};
const sumOfGroups = (d: any) => d.post.reactionGroups.reduce((n: number, g: { count: number }) => n + g.count, 0) as number;
const COUNTS = {
  likes: { query: 'query Count($id: ID!) { post(id: $id) { counts { likes } } }', pick: (d: any) => d.post.counts.likes as number },
  pg: { query: 'query Count($id: ID!) { likeCount(postId: $id) }', pick: (d: any) => d.likeCount as number },
  reactions: { query: 'query Count($id: ID!) { post(id: $id) { reactionGroups { count } } }', pick: sumOfGroups },
};
/** The runs in order: Tally as deployed by default (ROLE=all: the aggregator and the flush run alongside) liking, then reacting. */
const RUNS = [
  { name: 'Tally', kind: 'tally', env: { ROLE: 'all' }, count: COUNTS.likes, react: false },
  { name: 'Tally, reactions of 8 kinds mixed', kind: 'tally', env: { ROLE: 'all' }, count: COUNTS.reactions, react: true },
  { name: 'PostgreSQL', kind: 'pg-likes', env: {}, count: COUNTS.pg, react: false },
  { name: 'PostgreSQL, sync commit off', kind: 'pg-likes', env: { BENCH_PG_SYNCHRONOUS_COMMIT: 'off' }, count: COUNTS.pg, react: false },
] as const;
const ms = (x: number | null) => (x === null ? '∞' : `${x.toFixed(0)} ms`);

export type LikeRun = Awaited<ReturnType<typeof runLikeScenario>>['runs'][number];

export async function runLikeScenario(opts: { serverEnv: Record<string, string>; world: World; likes: number }) {
  const { world, serverEnv, likes: n } = opts;
  const deployment = deploymentRedis(serverEnv);
  const [hotPostId, reactionPostId] = world.likeTargetIds as [number, number];
  // Users 1..N: the seed made 1..USERS; the rest Tally creates on first sight (in the warm-up).
  const auth = createAuth(serverEnv.JWT_SECRET!);
  const tokens: string[] = [];
  for (let id = 1; id <= n; id++) tokens.push(world.tokens.get(id) ?? (await auth.sign(id)));
  // A hot post is liked in no particular order (a fixed seed: the same order everywhere).
  const order = shuffled(range(0, n), random(8)).map((i) => ({ token: tokens[i]!, i }));
  const measure = async ({ name, kind, env, count, react }: (typeof RUNS)[number]) => {
    const [postId, body] = react ? [reactionPostId, reactionBody] : [hotPostId, (p: number) => likeBody(p)];
    const likes = order.map(({ token, i }) => ({ body: body(postId, i), token }));
    const warmLikes = tokens.slice(0, USERS).map((token, i) => ({ body: body(world.warmupPostId, i), token }));
    const server = await startServer(kind, { ...serverEnv, ...env });
    const reader = graphqlReader(server.url, count.query, { id: String(postId) }, count.pick);
    try {
      await firstSight(server.url, tokens);
      await sendAll(server.url, warmLikes, LIKE_CONNECTIONS);
      const baseCount = await reader.read();
      if (baseCount !== 0) throw new Error(`${name}: the hot post has ${baseCount} likes before the run`);
      const acks: number[] = [];
      const poller = startCountPoller(reader.read);
      let load!: Awaited<ReturnType<typeof sendAll>>;
      // Tally: the API connection's round trips and commands per like (the poller's reads go through it too).
      const acknowledged = (body: string) => {
        if (changed(body)) acks.push(performance.now());
      };
      const redisLoaded = await redisPerRequest(server, async () => {
        load = await sendAll(server.url, likes, LIKE_CONNECTIONS, acknowledged);
        return load.requests;
      });
      // Keep polling until the count shows every like, or the watch ends.
      while (performance.now() - load.lastResponseAt < WATCH_AFTER_S * 1000 && (poller.latest() ?? 0) < acks.length) {
        await new Promise((r) => setTimeout(r, 20));
      }
      const polls = await poller.stop();
      const reachedN = polls.find((p) => p.count >= n);
      // Tally: fold what is pending, so a count short of N is a lost like, not a slow flush. PostgreSQL: the rows must agree too.
      if (kind === 'tally') await server.flush();
      const finalCount = await reader.read();
      // The next run starts on a quiet deployment: this one's facts all in PostgreSQL, not persisted in the next run's time.
      if (kind === 'tally') await waitUntilPersisted(deployment.redis, deployment.keys);
      const rows = kind === 'tally' ? n : await countLikeRows(serverEnv.DATABASE_URL!, hotPostId);
      const freshness = measureFreshness(acks, polls, baseCount);
      const exactAfterS = reachedN ? Math.max(0, reachedN.at - load.lastResponseAt) / 1000 : null;
      console.log(`  ${name}: ${finalCount}/${n} likes counted, ${freshness.included}/${acks.length} seen in ${freshness.polls} polls`);
      return { name, load, redisLoaded, changed: acks.length, finalCount, exact: finalCount === n && rows === n, exactAfterS, freshness };
    } finally {
      reader.close();
      await server.stop();
    }
  };
  const runs = [];
  try {
    for (const run of RUNS) {
      if (run.kind === 'pg-likes') await resetLikeTables(serverEnv.DATABASE_URL!, [hotPostId, world.warmupPostId]);
      runs.push(await measure(run));
    }
  } finally {
    deployment.redis.disconnect();
  }
  return { runs, likes: n, hotPostId, reactionPostId, connections: LIKE_CONNECTIONS, freshnessMethod: 'docs/performance.md#the-bench' };
}

export function likeRatios(runs: readonly LikeRun[]): Ratio[] {
  const [tally, reactions, pg, pgAsync] = runs; // in RUNS order
  const format = (x: number) => ms(Number.isFinite(x) ? x : null);
  // Likes never seen in the count are infinitely stale.
  const freshness = (label: string, { freshness: f }: LikeRun): Ratio => ({
    ...{ label, value: f.p99Ms ?? Infinity, format, target: FRESHNESS_P99_TARGET_MS, atMost: true },
    detail: `ack -> count includes it, p50 ${ms(f.p50Ms)}, max ${ms(f.maxMs)}; polled every ≥${f.pollIntervalMs} ms (mean ${f.meanPollIntervalMs} ms, read p99 ${ms(f.pollLatencyP99Ms)}); PostgreSQL p99 ${ms(pg!.freshness.p99Ms)}`,
  });
  return [
    versus('Tally likes/s / PostgreSQL, one hot post', tally!.load, pg!.load, THROUGHPUT_TARGET),
    // No target: the baseline of issue 8 waits for its commit like any PostgreSQL app does.
    versus('Tally likes/s / PostgreSQL (synchronous_commit=off), one hot post', tally!.load, pgAsync!.load),
    freshness('Tally freshness p99, one hot post', tally!),
    versus('Tally reactions/s / likes/s, one hot post (a reaction is as fast as a like)', reactions!.load, tally!.load, REACTION_TARGET),
    freshness('Tally reaction freshness p99, one hot post (sum of reactionGroups counts)', reactions!),
  ];
}

export const likeRows = (runs: readonly LikeRun[], likes: number, pg = runs[2]!): TableRow[] =>
  runs.map((r) => ({
    ...{ scenario: 'hot post', server: r.name, ...r.load, ...redisCells(null, r.redisLoaded) },
    check: `${r.exact ? 'exact' : 'NOT EXACT'} ${r.finalCount}/${likes}, fresh p50 ${ms(r.freshness.p50Ms)} p99 ${ms(r.freshness.p99Ms)}`,
    vs: r === pg ? 'baseline' : `${times(r.load.rps / pg.load.rps)} PostgreSQL`,
  }));
