// The Apollo Server instance: schema, error policy and plugins. HTTP is wired in src/http/.
import { ApolloServer } from '@apollo/server';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { formatError } from '../errors.js';
import type { GraphQLContext } from './context.js';
import { resolvers, typeDefs } from './schema.js';

export function createApollo(config: Config, logger: Logger) {
  const exposeDetails = config.nodeEnv !== 'production';
  return new ApolloServer<GraphQLContext>({
    typeDefs,
    resolvers,
    includeStacktraceInErrorResponses: exposeDetails,
    // main.ts owns shutdown (drain HTTP, finish batches, then stop Apollo); Apollo's own
    // SIGTERM handler would race it and leave `stop` waiting forever.
    stopOnTerminationSignals: false,
    formatError: (formatted, error) =>
      formatError(formatted, error, {
        exposeDetails,
        onInternal: (cause) => logger.error({ err: cause }, 'unexpected error in a GraphQL request'),
      }),
  });
}

export type Apollo = ReturnType<typeof createApollo>;
