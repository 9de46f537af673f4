// Apollo plugin that tells the request's scope (src/requestScope.ts) what operation ran and
// how it ended, for the per-request log line and metrics the HTTP layer records. A request
// refused before its context existed (a bad token) is described by the HTTP layer instead.
import type { ApolloServerPlugin } from '@apollo/server';
import type { GraphQLContext } from './context.js';

export function requestOutcomePlugin(): ApolloServerPlugin<GraphQLContext> {
  return {
    async requestDidStart() {
      return {
        // Bounded label set: the operation type and its root fields (from the schema), never
        // the client-chosen operation name.
        async didResolveOperation({ operation, contextValue: { scope } }) {
          if (!operation) return;
          const fields = operation.selectionSet.selections
            .map((s) => (s.kind === 'Field' ? s.name.value : '…'))
            .filter((name, i, all) => all.indexOf(name) === i)
            .sort();
          scope.operation = `${operation.operation} ${fields.join(',')}`;
        },
        async willSendResponse({ response, contextValue: { scope } }) {
          const errors = response.body.kind === 'single' ? response.body.singleResult.errors : undefined;
          scope.outcome = errors?.length ? String(errors[0]!.extensions?.code ?? 'INTERNAL_SERVER_ERROR') : 'ok';
          scope.operation ??= 'invalid';
        },
      };
    },
  };
}
