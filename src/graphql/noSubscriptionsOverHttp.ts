// Subscriptions are served over WebSocket (src/http/websocket.ts), where their limits live.
// Apollo would run one sent over HTTP as if it were a query of its root field, which has no
// resolver for that: an internal error instead of the client's mistake.
import type { ApolloServerPlugin, GraphQLRequestListener } from '@apollo/server';
import { badInput } from '../errors.js';
import type { GraphQLContext } from './context.js';

export function noSubscriptionsOverHttpPlugin(): ApolloServerPlugin<GraphQLContext> {
  const listener: GraphQLRequestListener<GraphQLContext> = {
    async didResolveOperation({ operation }) {
      if (operation?.operation === 'subscription') {
        throw badInput('subscriptions are served over WebSocket (graphql-transport-ws) at /graphql, not over HTTP', {
          http: { status: 400 },
        });
      }
    },
  };
  return {
    async requestDidStart() {
      return listener;
    },
  };
}
