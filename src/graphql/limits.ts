// Limits on what one GraphQL document may ask, enforced before execution: its size in bytes
// (comments count, though they are no tokens) and tokens by the parser itself (graphql-js
// stops counting past the limit, so huge documents cost little, and the error is an ordinary
// parse failure); depth, aliases and directives by GraphQL Armor
// (https://escape.tech/graphql-armor) validation rules; cost once the variables are known
// (src/graphql/cost.ts), and an anonymous client pays an expensive one (RATE_LIMIT_READS_MIN_COST
// or more) from its address's `reads` budget.
// List sizes (`first`, `ids`) are checked where they are read (src/graphql/args.ts); body
// size and execution time in the HTTP layer. The limits are documented, so their messages
// name them.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { ApolloArmor } from '@escape.tech/graphql-armor';
import type { GraphQLSchema, ParseOptions } from 'graphql';
import type { Config } from '../config.js';
import { badInput } from '../errors.js';
import type { GraphQLContext } from './context.js';
import { operationCost } from './cost.js';

export const MAX_DIRECTIVES = 50;

/** A refusal of the whole request, before anything ran: HTTP 400. */
const refused = (message: string) => badInput(message, { http: { status: 400 } });

export const tooLarge = (bytes: number, max: number) => refused(`the document has ${bytes} bytes; at most ${max} (MAX_QUERY_BYTES)`);

/** The document's size in bytes when it is over the limit, else null. */
export function oversizedDocument(query: unknown, maxBytes: number): number | null {
  if (typeof query !== 'string' || query.length <= maxBytes / 3) return null; // at most 3 UTF-8 bytes a UTF-16 unit
  const bytes = Buffer.byteLength(query);
  return bytes > maxBytes ? bytes : null;
}

export const tooCostly = (cost: number, max: number) =>
  refused(`Query Cost limit of ${max} exceeded, found ${Math.ceil(cost)} (MAX_QUERY_COST, with the variables sent)`);

export function documentLimits(config: Config) {
  const { limits } = config;
  const exposeLimits = true;
  const armor = new ApolloArmor({
    maxDepth: { n: limits.depth, exposeLimits },
    maxAliases: { n: limits.aliases, exposeLimits },
    maxDirectives: { n: MAX_DIRECTIVES, exposeLimits },
    // Armor's cost sees literals only (`first: $n` cost as 1): src/graphql/cost.ts costs with
    // the variables, after validation.
    costLimit: { enabled: false },
    // Armor's token limit parses in a plugin, outside Apollo's error handling (a syntax error
    // became a 500); its suggestion masking rewrites error objects graphql-jit freezes. The
    // parser's own limit and formatError (src/errors.ts) do both jobs instead.
    maxTokens: { enabled: false },
    blockFieldSuggestion: { enabled: false },
  }).protect();
  const parseOptions: ParseOptions = { maxTokens: limits.tokens };
  return { validationRules: armor.validationRules, parseOptions };
}

/** The cost and anonymous budget checks, for Apollo (HTTP; the size is checked before Apollo, in src/http/). */
export function queryLimitsPlugin(schema: GraphQLSchema, limits: Config['limits']): ApolloServerPlugin<GraphQLContext> {
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ document, operation, request, contextValue }) {
      if (!operation) return;
      const cost = operationCost(schema, { document, operation, variables: request.variables });
      if (cost === null) return; // its variables do not coerce: execution says so
      if (cost > limits.cost) throw tooCostly(cost, limits.cost);
      if (contextValue.viewer || contextValue.erasedViewer !== null || cost < limits.readsMinCost) return;
      await contextValue.deps.rateLimiter.takeAll('reads', { address: contextValue.scope.client }, Math.max(1, Math.ceil(cost)));
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
