// The feed's part of Tally's schema, for the baselines that build their own resolvers (naive,
// prisma-count): the same types and fields, so every server answers the bench's one query
// with the same JSON. Cursors here are unsigned (enough for a first page; the bench compares
// edges, not cursors).
import { GraphQLScalarType } from 'graphql';

export const feedTypeDefs = `#graphql
  scalar DateTime
  type Query { feed(first: Int = 20, after: String): PostConnection! }
  type PostConnection { edges: [PostEdge!]! pageInfo: PageInfo! }
  type PostEdge { cursor: String! node: Post! }
  type PageInfo { hasNextPage: Boolean! endCursor: String }
  type Post {
    id: ID!
    title: String!
    body: String!
    author: User!
    createdAt: DateTime!
    counts: PostCounts!
    myState: PostViewerState
  }
  type PostCounts { likes: Int! favs: Int! asOf: DateTime }
  type PostViewerState { liked: Boolean! faved: Boolean! }
  type User { id: ID! name: String createdAt: DateTime! }
`;

export const DateTime = new GraphQLScalarType<Date, string>({ name: 'DateTime', serialize: (value) => (value as Date).toISOString() });

export const feedCursor = (createdAt: Date, id: bigint | string) => Buffer.from(`${createdAt.getTime()}:${id}`).toString('base64url');

/** The keyset position a cursor stands for: creation time in ms and post id. */
export function feedPosition(cursor: string): { at: Date; id: bigint } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString().split(':');
  if (!at || !id || !/^\d+$/.test(at) || !/^\d+$/.test(id)) throw new TypeError(`not a feed cursor: ${JSON.stringify(cursor)}`);
  return { at: new Date(Number(at)), id: BigInt(id) };
}
