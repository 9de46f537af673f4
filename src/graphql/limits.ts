// Limits on what one GraphQL document may ask, enforced before execution: tokens by the
// parser itself (graphql-js stops counting past the limit, so huge documents cost little,
// and the error is an ordinary parse failure), depth, aliases, static cost and directives by
// GraphQL Armor (https://escape.tech/graphql-armor) validation rules. List sizes (`first`,
// `ids`) are checked where they are read (src/graphql/args.ts); body size and execution time
// in the HTTP layer. The limits are documented, so their messages name them.
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { ParseOptions } from 'graphql';
import type { Config } from '../config.js';

export const MAX_DIRECTIVES = 50;

export function documentLimits(config: Config) {
  const { limits } = config;
  const exposeLimits = true;
  const armor = new ApolloArmor({
    maxDepth: { n: limits.depth, exposeLimits },
    maxAliases: { n: limits.aliases, exposeLimits },
    costLimit: { maxCost: limits.cost, exposeLimits },
    maxDirectives: { n: MAX_DIRECTIVES, exposeLimits },
    // Armor's token limit parses in a plugin, outside Apollo's error handling (a syntax error
    // became a 500); its suggestion masking rewrites error objects graphql-jit freezes. The
    // parser's own limit and formatError (src/errors.ts) do both jobs instead.
    maxTokens: { enabled: false },
    blockFieldSuggestion: { enabled: false },
  }).protect();
  const parseOptions: ParseOptions = { maxTokens: limits.tokens };
  return { validationRules: armor.validationRules, parseOptions };
}
