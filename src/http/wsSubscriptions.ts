// What a `subscribe` message must pass before its stream starts, and how errors reach the
// socket: at most WS_MAX_SUBSCRIPTIONS per connection, the document limits HTTP has
// (src/graphql/limits.ts), subscriptions only (queries and mutations go over HTTP, with its
// budgets), then the stream itself, started here so that what refuses it (bad ids, variables
// that do not coerce) answers an `error` message rather than `next` and `complete`.
import type { ExecutionArgs, ExecutionResult, GraphQLError, GraphQLFormattedError, GraphQLSchema } from 'graphql';
import type { SubscribePayload } from 'graphql-ws';
import type { Logger } from 'pino';
import { badInput, formatError } from '../errors.js';
import type { GraphQLContext } from '../graphql/context.js';
import { asInput, type DocumentLimits } from '../graphql/limits.js';
import { createSharedSubscribe } from '../graphql/sharedSubscribe.js';

export interface SubscriptionChecksDeps {
  schema: GraphQLSchema;
  documentLimits: Pick<DocumentLimits, 'check'>;
  maxSubscriptions: number;
  production: boolean;
  logger: Logger;
}

/**
 * A refusal before a stream started: the root field's own error (it has a path) as it is; the
 * executor's (variables that do not coerce, no path) the client's input.
 */
const refusal = (error: GraphQLError) => (error.path || error.extensions.code ? error : asInput(error));

const subscriptionsOnly = (operation: { operation: string }) =>
  operation.operation === 'subscription'
    ? null
    : badInput('only subscriptions are served over WebSocket; send queries and mutations over HTTP');

export function createSubscriptionChecks(deps: SubscriptionChecksDeps) {
  const { logger } = deps;
  const subscribe = createSharedSubscribe();
  /** Streams `start` began, handed to graphql-ws when it runs their arguments. */
  const started = new WeakMap<ExecutionArgs, AsyncIterable<ExecutionResult>>();

  // `extensions.http` is for HTTP responses (Apollo strips it there); a socket has no status.
  const withoutHttp = (formatted: GraphQLFormattedError): GraphQLFormattedError => {
    if (!formatted.extensions?.http) return formatted;
    const { http: _, ...extensions } = formatted.extensions;
    return { ...formatted, extensions };
  };
  const format = (errors: readonly GraphQLError[]): GraphQLFormattedError[] =>
    errors.map((error) =>
      formatError(withoutHttp(error.toJSON()), error, {
        exposeDetails: !deps.production,
        onInternal: (cause) => logger.error({ err: cause }, 'unexpected error in a subscription'),
      }),
    );

  // A shared push (graphql/sharedSubscribe.ts) carries one errors array to every subscriber:
  // formatted, and an internal error logged, once, not once per socket.
  const formattedPushErrors = new WeakMap<readonly GraphQLError[], GraphQLFormattedError[]>();

  return {
    format,

    formatPush(errors: readonly GraphQLError[]): GraphQLFormattedError[] {
      let formatted = formattedPushErrors.get(errors);
      if (!formatted) {
        formatted = format(errors);
        formattedPushErrors.set(errors, formatted);
      }
      return formatted;
    },

    /**
     * The execution arguments of a subscription whose stream has started, or why it may not.
     * `open` counts the subscriptions of the connection, this one included (graphql-ws
     * registers it before asking).
     */
    async start(payload: SubscribePayload, open: number, contextValue: GraphQLContext): Promise<ExecutionArgs | readonly GraphQLError[]> {
      if (open > deps.maxSubscriptions) {
        return [badInput(`at most ${deps.maxSubscriptions} subscriptions per connection (WS_MAX_SUBSCRIPTIONS)`)];
      }
      const checked = deps.documentLimits.check(payload, subscriptionsOnly);
      if (!('document' in checked)) return checked;
      const args: ExecutionArgs = {
        schema: deps.schema,
        document: checked.document,
        operationName: payload.operationName,
        variableValues: payload.variables,
        contextValue,
      };
      const stream = await subscribe(args);
      if (!(Symbol.asyncIterator in stream)) return (stream.errors ?? []).map(refusal);
      started.set(args, stream);
      return args;
    },

    /** graphql-ws's subscribe: the stream `start` began (or, for arguments it did not see, a new one). */
    subscribe: (args: ExecutionArgs) => started.get(args) ?? subscribe(args),
  };
}
