// An Apollo Gateway composing subgraphs, set up as docs/adopting.md tells a product team to:
// it composes from the subgraphs themselves (Tally's SDL taken with a service credential) and
// forwards each client's Authorization header to every subgraph.
import { ApolloGateway, IntrospectAndCompose, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import type { GraphQLResponse } from './app.js';

interface GatewayContext {
  authorization?: string;
}

export async function startGateway(subgraphs: { name: string; url: string }[], serviceToken: string) {
  const gateway = new ApolloGateway({
    supergraphSdl: new IntrospectAndCompose({
      subgraphs,
      introspectionHeaders: { authorization: `Bearer ${serviceToken}` },
    }),
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<GatewayContext>({
        url,
        willSendRequest({ request, context }) {
          if (context.authorization) request.http?.headers.set('authorization', context.authorization);
        },
      }),
  });
  const server = new ApolloServer<GatewayContext>({ gateway });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ authorization: req.headers.authorization }),
  });

  const gql = async <T = any>(query: string, variables?: Record<string, unknown>, token?: string): Promise<GraphQLResponse<T>> => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (token) headers.authorization = `Bearer ${token}`;
    const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    return { status: res.status, headers: res.headers, ...((await res.json()) as object) };
  };
  return { url, gql, stop: () => server.stop() };
}
