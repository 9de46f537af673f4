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
import {
  type DocumentNode,
  GraphQLError,
  type GraphQLSchema,
  getOperationAST,
  type OperationDefinitionNode,
  type ParseOptions,
  parse,
  specifiedRules,
  type ValidationRule,
  validate,
} from 'graphql';
import type { Config } from '../config.js';
import { badInput, ErrorCode } from '../errors.js';
import type { GraphQLContext } from './context.js';
import { type CostedRequest, operationCost } from './cost.js';

export const MAX_DIRECTIVES = 50;

/** A refusal of the whole request, before anything ran: HTTP 400. */
const refused = (message: string) => badInput(message, { http: { status: 400 } });

/** A document's own size in bytes when it is over `maxBytes`, else null (cheap for small ones). */
function oversizedDocument(query: unknown, maxBytes: number): number | null {
  if (typeof query !== 'string' || query.length <= maxBytes / 3) return null; // at most 3 UTF-8 bytes a UTF-16 unit
  const bytes = Buffer.byteLength(query);
  return bytes > maxBytes ? bytes : null;
}

/** A parse or validation error as the client's input (graphql-js gives them no code). */
export const asInput = (error: GraphQLError) =>
  new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    extensions: { code: ErrorCode.BAD_USER_INPUT },
  });

/**
 * The document limits, built once per process and shared by every transport: Apollo takes the
 * parse options, validation rules and cost plugin (HTTP, whose server checks the size before
 * Apollo hashes or parses anything); the WebSocket endpoint, which has no Apollo, runs `check`.
 */
export function createDocumentLimits(schema: GraphQLSchema, limits: Config['limits']) {
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
  const validationRules: ValidationRule[] = armor.validationRules;

  /** MAX_QUERY_BYTES: refused before anything else looks at the document. */
  function sizeRefusal(query: unknown): GraphQLError | null {
    const bytes = oversizedDocument(query, limits.queryBytes);
    return bytes === null ? null : refused(`the document has ${bytes} bytes; at most ${limits.queryBytes} (MAX_QUERY_BYTES)`);
  }

  /** MAX_QUERY_COST, with the variables sent (null cost: they do not coerce, which execution reports). */
  function costRefusal(args: CostedRequest) {
    const cost = operationCost(schema, args);
    if (cost === null || cost <= limits.cost) return { cost, refusal: null };
    return {
      cost,
      refusal: refused(`Query Cost limit of ${limits.cost} exceeded, found ${Math.ceil(cost)} (MAX_QUERY_COST, with the variables sent)`),
    };
  }

  /**
   * Every limit, for a transport without Apollo: the document and its operation, or why not.
   * `refuseOperation` is the transport's own rule on the operation (checked before its cost).
   */
  function check(
    request: { query: string; operationName?: string | null; variables?: Record<string, unknown> | null },
    refuseOperation: (operation: OperationDefinitionNode) => GraphQLError | null = () => null,
  ): { document: DocumentNode; operation: OperationDefinitionNode } | readonly GraphQLError[] {
    const { query, operationName, variables } = request;
    const tooLarge = sizeRefusal(query);
    if (tooLarge) return [tooLarge];
    let document: DocumentNode;
    try {
      document = parse(query, parseOptions);
    } catch (error) {
      return [asInput(error as GraphQLError)];
    }
    const errors = validate(schema, document, [...specifiedRules, ...validationRules]);
    if (errors.length > 0) return errors.map(asInput);
    const operation = getOperationAST(document, operationName);
    if (!operation) return [badInput('the document must name one operation to run (operationName)')];
    const refusedOperation = refuseOperation(operation);
    if (refusedOperation) return [refusedOperation];
    const { refusal } = costRefusal({ document, operation, variables: variables ?? undefined });
    return refusal ? [refusal] : { document, operation };
  }

  /** The cost and anonymous budget checks, for Apollo. */
  const plugin: ApolloServerPlugin<GraphQLContext> = {
    async requestDidStart() {
      return listener;
    },
  };
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ document, operation, request, contextValue }) {
      if (!operation) return;
      const { cost, refusal } = costRefusal({ document, operation, variables: request.variables });
      if (refusal) throw refusal;
      if (cost === null || contextValue.viewer || contextValue.erasedViewer !== null || cost < limits.readsMinCost) return;
      await contextValue.deps.rateLimiter.takeAll('reads', { address: contextValue.scope.client }, Math.max(1, Math.ceil(cost)));
    },
  };

  return { parseOptions, validationRules, sizeRefusal, check, plugin };
}

export type DocumentLimits = ReturnType<typeof createDocumentLimits>;
