// Baseline (a) of the feed (docs/performance.md, "The bench").
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { resolvers, typeDefs } from '../../src/graphql/schema.js';
import { startTallyCore } from './tallyCore.js';

export async function startApolloDefaultFeedServer(env: NodeJS.ProcessEnv) {
  const core = await startTallyCore(env);
  const apollo = new ApolloServer<GraphQLContext>({ typeDefs, resolvers });
  const listen = { host: env.HOST || '127.0.0.1', port: Number(env.PORT ?? 0) };
  const { url } = await startStandaloneServer(apollo, { listen, context: ({ req }) => core.contextOf(req) });
  // apollo.stop() also closes the HTTP server (standalone installs the drain plugin).
  return { url: url.replace(/\/$/, ''), redisStats: core.redisStats, stop: () => apollo.stop().then(core.stop) };
}
