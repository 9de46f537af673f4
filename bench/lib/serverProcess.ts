// Child-process entry: runs ONE server under test, so the load generator (in the parent)
// never shares its event loop. Started by bench/lib/servers.ts as
//   node [flags] .bench-build/bench/lib/serverProcess.js <kind>   (a ServerKind below; or the
//   .ts file through tsx)
// with its settings in the environment. Talks to the parent over IPC: it sends
// { type: 'ready', url } and answers { id, cmd: 'redisStats' | 'flush' | 'memory' | 'stop' }.
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { startNaiveFeedServer } from '../baselines/naiveFeed.js';
import { startPgLikeServer } from '../baselines/pgLikes.js';
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
    process.disconnect?.();
    process.exit(0);
  }));

// Never outlive the parent: if it dies, the IPC channel closes.
process.on('disconnect', () => void stop());

process.on('message', async (message: { id: number; cmd: string }) => {
  const reply = (result: unknown) => process.send?.({ id: message.id, result });
  try {
    switch (message.cmd) {
      case 'redisStats':
        return reply(server.redisStats?.() ?? null);
      case 'flush':
        return reply((await server.flush?.()) ?? null);
      case 'memory': {
        // After a full collection when Node runs with --expose-gc: what is live, not garbage.
        const gc = (globalThis as { gc?: () => void }).gc;
        gc?.();
        return reply({ ...process.memoryUsage(), collected: gc !== undefined });
      }
      case 'stop':
        reply(true);
        return void stop();
    }
  } catch (error) {
    process.send?.({ id: message.id, error: String(error) });
  }
});

process.send!({ type: 'ready', url: server.url });
