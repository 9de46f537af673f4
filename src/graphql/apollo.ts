// The Apollo Server instance: schema, error policy and plugins. HTTP is wired in src/http/.
import { ApolloServer } from '@apollo/server';
import {
  ApolloServerPluginCacheControlDisabled,
  ApolloServerPluginInlineTraceDisabled,
  ApolloServerPluginLandingPageDisabled,
  ApolloServerPluginUsageReportingDisabled,
} from '@apollo/server/plugin/disabled';
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { formatError } from '../errors.js';
import type { GraphQLContext } from './context.js';
import type { DocumentCaches } from './documentCache.js';
import { erasedTokenPlugin } from './erasedToken.js';
import type { DocumentLimits } from './limits.js';
import { noSubscriptionsOverHttpPlugin } from './noSubscriptionsOverHttp.js';
import { requestOutcomePlugin } from './requestOutcome.js';

export function createApollo(
  config: Config,
  logger: Logger,
  schema: GraphQLSchema,
  caches: DocumentCaches,
  persistedQueryStore: KeyValueCache<string>,
  limits: DocumentLimits,
) {
  const production = config.nodeEnv === 'production';
  return new ApolloServer<GraphQLContext>({
    ...(caches.jit ? { gateway: caches.jit.gateway } : { schema }),
    documentStore: caches.documentStore,
    validationRules: limits.validationRules,
    parseOptions: limits.parseOptions,
    // One operation per HTTP request: a batch would slip past per-request limits.
    allowBatchedHttpRequests: false,
    // The store applies its own expiry (config.persistedQueries.ttlS) and bounds.
    persistedQueries: { cache: persistedQueryStore, ttl: null },
    includeStacktraceInErrorResponses: !production,
    // Production clients have no use for the schema; explorers use a non-production instance.
    introspection: !production,
    // main.ts owns shutdown (drain HTTP, finish batches, then stop Apollo); Apollo's own
    // SIGTERM handler would race it and leave `stop` waiting forever.
    stopOnTerminationSignals: false,
    plugins: [
      requestOutcomePlugin(schema),
      noSubscriptionsOverHttpPlugin(),
      limits.plugin,
      erasedTokenPlugin(),
      // GraphiQL is served by Tally itself (src/http/), with no CDN.
      ApolloServerPluginLandingPageDisabled(),
      // No cache hints in this schema: computing them costs on every field of a feed page.
      ApolloServerPluginCacheControlDisabled(),
      ApolloServerPluginUsageReportingDisabled(),
      // A subgraph would otherwise time every field for any client sending `apollo-federation-include-trace`,
      // and tell it how long each resolver took; Tally's own metrics report instead.
      ApolloServerPluginInlineTraceDisabled(),
    ],
    formatError: (formatted, error) =>
      formatError(formatted, error, {
        // Production hides internals and "Did you mean …?" (it describes the schema to anyone probing it).
        exposeDetails: !production,
        onInternal: (cause) => logger.error({ err: cause }, 'unexpected error in a GraphQL request'),
      }),
  });
}

export type Apollo = ReturnType<typeof createApollo>;
