// Apollo plugin that tells the request's scope (src/requestScope.ts) what operation ran and
// how it ended, for the per-request log line and metrics the HTTP layer records. A request
// refused before its context existed (a bad token) is described by the HTTP layer instead.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import type { OperationDefinitionNode } from 'graphql';
import type { GraphQLContext } from './context.js';

/**
 * Bounded label set: the operation type and its root fields (from the schema), never the
 * client-chosen operation name.
 */
function operationLabel(operation: OperationDefinitionNode): string {
  const fields = operation.selectionSet.selections
    .map((s) => (s.kind === 'Field' ? s.name.value : '…'))
    .filter((name, i, all) => all.indexOf(name) === i)
    .sort();
  return `${operation.operation} ${fields.join(',')}`;
}

export function requestOutcomePlugin(): ApolloServerPlugin<GraphQLContext> {
  // Apollo reuses a cached document's AST for every request that sends it.
  const labels = new WeakMap<OperationDefinitionNode, string>();
  // One listener for every request: it keeps no state of its own (the scope is per request).
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ operation, contextValue: { scope } }) {
      if (!operation) return;
      let label = labels.get(operation);
      if (label === undefined) {
        label = operationLabel(operation);
        labels.set(operation, label);
      }
      scope.operation = label;
    },
    async willSendResponse({ response, contextValue: { scope } }) {
      const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
      scope.outcome = errors?.length ? String(errors[0]!.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'ok';
      scope.operation ??= 'invalid';
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
