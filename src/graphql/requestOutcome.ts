// Apollo plugin that tells the request's scope (src/requestScope.ts) what operation ran and
// how it ended, for the per-request log line and metrics the HTTP layer records. A request
// refused before its context existed (a bad token) is described by the HTTP layer instead.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import type { GraphQLSchema, OperationDefinitionNode } from 'graphql';
import { APQ_PROTOCOL_CODES, ErrorCode } from '../errors.js';
import type { GraphQLContext } from './context.js';

/**
 * A label the schema bounds, whatever clients send: the operation type and its first root
 * field in the schema's order, `+` when it asks for others too (`query feed+` for a feed page
 * that also asks for the viewer). Every combination of root fields would be 2^fields labels,
 * and the client-chosen operation name is unbounded.
 */
function operationLabel(schema: GraphQLSchema, operation: OperationDefinitionNode): string {
  const asked = new Set(operation.selectionSet.selections.map((s) => (s.kind === 'Field' ? s.name.value : null)));
  const fields = Object.keys(schema.getRootType(operation.operation)?.getFields() ?? {});
  const first = fields.find((name) => asked.has(name));
  if (first === undefined) return `${operation.operation} other`; // only __typename, fragments or introspection
  return `${operation.operation} ${first}${asked.size > 1 ? '+' : ''}`;
}

/** Outcomes are the closed error codes (src/errors.ts), APQ's, or `ok`; anything else would be a new series. */
const OUTCOMES = new Set<string>([...Object.values(ErrorCode), ...APQ_PROTOCOL_CODES, 'ok']);
const outcomeOf = (code: unknown) => (OUTCOMES.has(String(code)) ? String(code) : ErrorCode.INTERNAL_SERVER_ERROR);

export function requestOutcomePlugin(schema: GraphQLSchema): ApolloServerPlugin<GraphQLContext> {
  // Apollo reuses a cached document's AST for every request that sends it.
  const labels = new WeakMap<OperationDefinitionNode, string>();
  // One listener for every request: it keeps no state of its own (the scope is per request).
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ operation, contextValue: { scope } }) {
      if (!operation) return;
      let label = labels.get(operation);
      if (label === undefined) {
        label = operationLabel(schema, operation);
        labels.set(operation, label);
      }
      scope.operation = label;
    },
    async willSendResponse({ response, contextValue: { scope } }) {
      const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      scope.outcome = errors?.length ? outcomeOf(errors[0]!.extensions?.code) : 'ok';
      scope.operation ??= 'invalid';
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
