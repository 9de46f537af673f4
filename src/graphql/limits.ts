// Limits on what one GraphQL document may ask, enforced before execution with GraphQL Armor
// (https://escape.tech/graphql-armor): depth, aliases, static cost, tokens (the parser stops
// counting past the limit, so huge documents cost little), directives, and no field
// suggestions in production. List sizes (`first`, `ids`) are checked where they are read
// (src/graphql/args.ts); body size and execution time in the HTTP layer.
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { Config } from '../config.js';

export function documentLimits(config: Config) {
  const { limits } = config;
  const exposeLimits = config.nodeEnv !== 'production';
  return new ApolloArmor({
    maxDepth: { n: limits.depth, exposeLimits },
    maxAliases: { n: limits.aliases, exposeLimits },
    costLimit: { maxCost: limits.cost, exposeLimits },
    maxTokens: { n: limits.tokens, exposeLimits },
    maxDirectives: { n: 50, exposeLimits },
    blockFieldSuggestion: { enabled: config.nodeEnv === 'production' },
  }).protect();
}
