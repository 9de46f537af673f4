// A token whose user was erased works for one thing only: asking for the erasure again. A
// mobile client that lost the answer to `eraseAccount` retries it and learns the erasure went
// through (ERASING or DONE); any other operation with that token is refused as a whole, as if
// the token had never been valid.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import type { OperationDefinitionNode } from 'graphql';
import { accountErased } from '../errors.js';
import type { GraphQLContext } from './context.js';

/** A mutation whose root fields are only `eraseAccount` (and `__typename`). */
function onlyAsksForErasure(operation: OperationDefinitionNode): boolean {
  return (
    operation.operation === 'mutation' &&
    operation.selectionSet.selections.every((s) => s.kind === 'Field' && (s.name.value === 'eraseAccount' || s.name.value === '__typename'))
  );
}

export function erasedTokenPlugin(): ApolloServerPlugin<GraphQLContext> {
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ operation, contextValue }) {
      if (contextValue.erasedViewer !== null && !(operation && onlyAsksForErasure(operation))) throw accountErased();
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
