// Pages of the relation lists (likers, liked posts, followers, following): scan the facts
// the viewer may see newest first (src/db/relationLists.ts), load the nodes through the
// request's loaders, and page with encrypted cursors.
import type { ListRow } from '../../db/relationLists.js';
import { parsePageSize } from '../args.js';
import { type Page, toFilteredPage } from '../connection.js';
import type { GraphQLContext } from '../context.js';
import { decodePosition, encodePosition } from '../positionCursor.js';

export interface ListRequest<T> {
  /** Names the list and its owner: cursors are signed for it. */
  list: string;
  first: number | null | undefined;
  after: string | null | undefined;
  scan: (limit: number, from: { at: Date; id: number } | null) => Promise<ListRow[]>;
  load: (ids: number[]) => Promise<(T | null | Error)[]>;
  /** False drops a loaded node that changed since the scan (its row still advances the cursor). */
  keep?: (node: T) => boolean;
}

export async function listPage<T>(ctx: GraphQLContext, request: ListRequest<T>): Promise<Page<T>> {
  const limit = parsePageSize(request.first);
  const from = decodePosition(ctx.deps.cursors, request.list, request.after);
  await ctx.loaders.listPageToken.load(ctx.loaders.nextListPage()); // each page is a SQL scan
  const scanned = await request.scan(limit + 1, from);
  const loaded = await request.load(scanned.slice(0, limit).map((row) => row.id));
  const nodes = loaded.map((node) => {
    if (node instanceof Error) throw node;
    return node && (request.keep?.(node) ?? true) ? node : null;
  });
  return toFilteredPage(scanned, limit, (row) => encodePosition(ctx.deps.cursors, request.list, row), nodes);
}
