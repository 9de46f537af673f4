// What the hand-written feed baselines (naive, Prisma _count) share besides Tally's SDL
// (schema.graphql, so every server answers the bench's query with the same JSON): a plain
// DateTime scalar and unsigned keyset cursors (enough for a first page; the bench compares
// edges, not cursors).
import { GraphQLScalarType } from 'graphql';

export const DateTime = new GraphQLScalarType<Date, string>({ name: 'DateTime', serialize: (value) => (value as Date).toISOString() });

export const feedCursor = (createdAt: Date, id: bigint | string) => Buffer.from(`${createdAt.getTime()}:${id}`).toString('base64url');

/** The keyset position a cursor stands for: creation time in ms and post id. */
export function feedPosition(cursor: string): { at: Date; id: bigint } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString().split(':');
  if (!at || !id || !/^\d+$/.test(at) || !/^\d+$/.test(id)) throw new TypeError(`not a feed cursor: ${JSON.stringify(cursor)}`);
  return { at: new Date(Number(at)), id: BigInt(id) };
}
