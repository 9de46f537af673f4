// Child-process entry: ONE server under test, its kind the argument, its settings the environment.
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { type RedisStats, trackRedis } from '../baselines/common.js';
import { startNaiveFeedServer } from '../baselines/naiveFeed.js';
import { startPgLikeServer } from '../baselines/pgLikes.js';
import { serveParent } from './servers.js';

export type ServerKind = 'tally' | 'apollo-default-feed' | 'naive-feed' | 'prisma-count-feed' | 'jit-feed' | 'pg-likes' | 'gateway';
type Running = { url: string; redisStats?: () => RedisStats; flush?: () => Promise<number>; stop(): Promise<unknown> };

async function startTally(): Promise<Running> {
  const app = createApp(loadConfig(process.env));
  const redisStats = trackRedis(app.redis, app.redisRoundTrips);
  const { url } = await app.start();
  const all = Array.from({ length: app.config.partitions }, (_, p) => p);
  const flush = async () => (app.workers ? (await app.workers.flusher.foldPartitions(all)).folded : 0);
  return { url, redisStats, flush, stop: () => app.stop() };
}

// Imported on demand: a child loads only its own server's modules, which would otherwise inflate its memory.
const starters: Record<ServerKind, () => Promise<Running>> = {
  tally: startTally,
  'apollo-default-feed': async () => (await import('../baselines/apolloDefaultFeed.js')).startApolloDefaultFeedServer(process.env),
  'naive-feed': () => startNaiveFeedServer(process.env),
  'prisma-count-feed': async () => (await import('../baselines/prismaCountFeed.js')).startPrismaCountFeedServer(process.env),
  'jit-feed': async () => (await import('../baselines/jitFeed.js')).startJitFeedServer(process.env),
  'pg-likes': () => startPgLikeServer(process.env),
  gateway: async () => (await import('../baselines/productGateway.js')).startProductGateway(process.env),
};

const kind = process.argv[2] as ServerKind;
if (!starters[kind] || !process.send) {
  console.error(`usage: node --import tsx bench/lib/serverProcess.ts <${Object.keys(starters).join('|')}> (with an IPC channel)`);
  process.exit(2);
}
const server = await starters[kind]();
const gc = (globalThis as { gc?: () => void }).gc;
const memory = () => {
  gc?.(); // with --expose-gc: what is live, not garbage
  return { ...process.memoryUsage(), collected: gc !== undefined };
};
const commands = { redisStats: () => server.redisStats?.() ?? null, flush: async () => (await server.flush?.()) ?? null, memory };
serveParent(commands, { url: server.url }, () => server.stop());
