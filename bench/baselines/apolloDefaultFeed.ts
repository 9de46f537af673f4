// Baseline (a) for the feed: Tally's schema, resolvers and per-request context (the same
// DataLoaders on the same Redis and PostgreSQL clients) in Apollo Server as it comes:
// `new ApolloServer({ typeDefs, resolvers })` with its default plugins, served by
// `startStandaloneServer`. Only the serving and execution pipeline differs from Tally.
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { resolvers, typeDefs } from '../../src/graphql/schema.js';
import { createRequestScope, requestIdFrom } from '../../src/requestScope.js';
import { startTallyCore } from '../lib/tallyCore.js';

export async function startApolloDefaultFeedServer(env: NodeJS.ProcessEnv) {
  const core = await startTallyCore(env);
  const apollo = new ApolloServer<GraphQLContext>({ typeDefs, resolvers });
  const { url } = await startStandaloneServer(apollo, {
    listen: { host: env.HOST || '127.0.0.1', port: Number(env.PORT ?? 0) },
    context: ({ req }) =>
      core.context(
        req.headers.authorization,
        createRequestScope(requestIdFrom(req.headers['x-request-id']), req.socket.remoteAddress ?? 'unknown'),
      ),
  });
  return {
    url: url.replace(/\/$/, ''),
    redisStats: core.redisStats,
    async stop() {
      await apollo.stop(); // also closes the HTTP server (standalone installs the drain plugin)
      await core.stop();
    },
  };
}
