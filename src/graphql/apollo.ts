// The Apollo Server instance: schema, error policy and plugins. HTTP is wired in src/http/.
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDisableSuggestions } from '@apollo/server/plugin/disableSuggestions';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { formatError } from '../errors.js';
import type { GraphQLContext } from './context.js';
import { resolvers, typeDefs } from './schema.js';

export function createApollo(config: Config, logger: Logger) {
  const production = config.nodeEnv === 'production';
  return new ApolloServer<GraphQLContext>({
    typeDefs,
    resolvers,
    includeStacktraceInErrorResponses: !production,
    // Production clients have no use for the schema; explorers use a non-production instance.
    introspection: !production,
    // main.ts owns shutdown (drain HTTP, finish batches, then stop Apollo); Apollo's own
    // SIGTERM handler would race it and leave `stop` waiting forever.
    stopOnTerminationSignals: false,
    plugins: [
      // GraphiQL is served by Tally itself (src/http/), with no CDN.
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints in this schema: computing them costs on every field of a feed page.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      // "Did you mean …?" would describe the schema to anyone probing it.
      ...(production ? [ApolloServerPluginDisableSuggestions()] : []),
    ],
    formatError: (formatted, error) =>
      formatError(formatted, error, {
        exposeDetails: !production,
        onInternal: (cause) => logger.error({ err: cause }, 'unexpected error in a GraphQL request'),
      }),
  });
}

export type Apollo = ReturnType<typeof createApollo>;
