import { KINDS } from '../../domain/kinds.js';
import { BOOKMARK } from '../../domain/relations.js';
import { kindTakenBy, ownerType } from '../../services/entities.js';
import { MAX_IDS_PER_REQUEST, oneToMax, parseId, parseIds, parsePageSize } from '../args.js';
import { toPage } from '../connection.js';
import { requireViewer } from '../context.js';
import type { QueryResolvers } from '../generated.js';
import { decodePosition, encodePosition } from '../positionCursor.js';
import { listPage } from './lists.js';
import { withPageState } from './pageState.js';

export const Query: QueryResolvers = {
  post: (_, { id }, { loaders }) => loaders.post.load(parseId(id)),

  posts: async (_, { ids }, { loaders }) => {
    const results = await loaders.post.loadMany(parseIds(ids));
    return results.map((result) => {
      if (result instanceof Error) throw result;
      return result;
    });
  },

  feed: async (_, { first, after }, ctx, info) => {
    const { deps, loaders } = ctx;
    const limit = parsePageSize(first);
    const position = decodePosition(deps.cursors, 'feed', after);
    // Posts of a user whose erasure started are left out until the erasure deletes them (seconds).
    const rows = deps.visibility.posts(await deps.feedCache.page(limit + 1, position && { createdAt: position.at, id: position.id }));
    for (const post of rows) loaders.post.prime(post.id, post);
    // The row past the page only says whether there is a next page: nothing is loaded for it.
    const shown = await withPageState(rows.slice(0, limit), info, ctx);
    return toPage([...shown, ...rows.slice(limit)], limit, (post) =>
      encodePosition(deps.cursors, 'feed', { at: post.createdAt, id: post.id }),
    );
  },

  user: (_, { id }, { loaders }) => loaders.user.load(parseId(id)),

  viewer: (_, __, { viewer, loaders }) => (viewer ? loaders.user.load(viewer.id) : null),

  reactionKinds: () => KINDS.reactions.map((kind) => kind.reaction!),

  entities: async (_, { type, ids }, { loaders }) => {
    ownerType(type);
    return loaders.ownedEntity.loadMany(oneToMax(ids, 'ids', MAX_IDS_PER_REQUEST).map((key) => ({ type, key }))).then((found) =>
      found.map((entity) => {
        if (entity instanceof Error) throw entity;
        return entity;
      }),
    );
  },

  entityBookmarks: (_, { type, first, after }, ctx) => {
    // Nobody else may list them, so the list is the viewer's own: no user to name.
    const viewer = requireViewer(ctx);
    kindTakenBy(ownerType(type), BOOKMARK);
    return listPage(ctx, {
      list: `bookmarks:${type}:${viewer.id}`,
      first,
      after,
      scan: (limit, from) => ctx.deps.lists.entitiesOf(viewer.id, type, BOOKMARK.name, limit, from),
      load: (ids) => ctx.loaders.ownedEntityById.loadMany(ids), // one deleted since the scan loads as null: left out
    });
  },
};
