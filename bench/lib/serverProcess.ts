// Child-process entry (bench/lib/child.ts): runs ONE server under test, its kind the argument
// and its settings the environment, so the load generator never shares its event loop.
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { startNaiveFeedServer } from '../baselines/naiveFeed.js';
import { startPgLikeServer } from '../baselines/pgLikes.js';
import { serveParent } from './child.js';
import { type RedisStats, trackRedis } from './redisStats.js';

export type ServerKind = 'tally' | 'apollo-default-feed' | 'naive-feed' | 'prisma-count-feed' | 'jit-feed' | 'pg-likes';

interface Running {
  url: string;
  /** Redis round trips and commands of the API connection since start. */
  redisStats?: () => RedisStats;
  /** Folds every partition's pending aggregates into the counters now. */
  flush?: () => Promise<number>;
  stop(): Promise<void>;
}

async function startTally(): Promise<Running> {
  const app = createApp(loadConfig(process.env));
  const redisStats = trackRedis(app.redis, app.redisRoundTrips);
  const { url } = await app.start();
  const all = Array.from({ length: app.config.partitions }, (_, p) => p);
  return {
    url,
    redisStats,
    flush: async () => (app.workers ? (await app.workers.flusher.foldPartitions(all)).folded : 0),
    stop: () => app.stop(),
  };
}

const starters: Record<ServerKind, () => Promise<Running>> = {
  tally: startTally,
  // Imported on demand: a child loads only its own server (graphql-jit, the bench's Prisma
  // client), so a server's memory is not inflated by another's modules.
  'apollo-default-feed': async () => (await import('../baselines/apolloDefaultFeed.js')).startApolloDefaultFeedServer(process.env),
  'naive-feed': () => startNaiveFeedServer(process.env),
  'prisma-count-feed': async () => (await import('../baselines/prismaCountFeed.js')).startPrismaCountFeedServer(process.env),
  'jit-feed': async () => (await import('../baselines/jitFeed.js')).startJitFeedServer(process.env),
  'pg-likes': () => startPgLikeServer(process.env),
};

const kind = process.argv[2] as ServerKind;
if (!starters[kind] || !process.send) {
  console.error(`usage: node --import tsx bench/lib/serverProcess.ts <${Object.keys(starters).join('|')}> (with an IPC channel)`);
  process.exit(2);
}

const server = await starters[kind]();
let stopping: Promise<void> | null = null;
const stop = () =>
  (stopping ??= server.stop().finally(() => {
    if (process.connected) process.disconnect();
    process.exit(0);
  }));

// Never outlive the parent: if it dies, the IPC channel closes.
process.on('disconnect', () => void stop());

serveParent(
  {
    redisStats: () => server.redisStats?.() ?? null,
    flush: async () => (await server.flush?.()) ?? null,
    memory: () => {
      // After a full collection when Node runs with --expose-gc: what is live, not garbage.
      const gc = (globalThis as { gc?: () => void }).gc;
      gc?.();
      return { ...process.memoryUsage(), collected: gc !== undefined };
    },
  },
  { url: server.url },
);
