// What the hand-written baselines share: the viewer, DateTime, unsigned keyset cursors, set-up SQL.
import { ApolloServer, type ApolloServerOptionsWithTypeDefs } from '@apollo/server';
import { GraphQLScalarType } from 'graphql';
import pg from 'pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import { serveGraphQL } from '../lib/graphqlHttp.js';

export const POOL_SIZE = 10; // Tally's Prisma pool size
export type ViewerContext = { viewer: Viewer | null };

/** Apollo Server with its defaults behind bench/lib/graphqlHttp.ts, the bearer token's viewer in its context; `close` after it stops. */
export async function serveWithViewer(
  env: NodeJS.ProcessEnv,
  typeDefs: string,
  resolvers: ApolloServerOptionsWithTypeDefs<ViewerContext>['resolvers'],
  close: () => Promise<unknown>,
) {
  const auth = createAuth(env.JWT_SECRET!);
  const apollo = new ApolloServer<ViewerContext>({ typeDefs, resolvers });
  const server = await serveGraphQL(env, apollo, async (authorization) => ({ viewer: await auth.viewerFrom(authorization) }));
  return { url: server.url, stop: () => server.stop().then(close) };
}

export const DateTime = new GraphQLScalarType<Date, string>({ name: 'DateTime', serialize: (value) => (value as Date).toISOString() });

/** The keyset position `after` stands for (creation time and post id), null for the first page. */
export function feedPosition(after: string | null | undefined): { at: Date; id: bigint } | null {
  if (!after) return null;
  const [at, id] = Buffer.from(after, 'base64url').toString().split(':');
  if (!/^\d+$/.test(at ?? '') || !/^\d+$/.test(id ?? '')) throw new TypeError(`not a feed cursor: ${JSON.stringify(after)}`);
  return { at: new Date(Number(at)), id: BigInt(id!) };
}

/** The connection of a page of `first` posts from `rows` (one more when another page follows). */
export function feedPage<T>(rows: T[], first: number, positionOf: (row: T) => [Date, bigint | string]) {
  const edges = rows.slice(0, first).map((node) => {
    const [at, id] = positionOf(node);
    return { cursor: Buffer.from(`${at.getTime()}:${id}`).toString('base64url'), node };
  });
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}

export async function withPg<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
