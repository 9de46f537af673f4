import { POST, USER } from '../../domain/entities.js';
import { BOOKMARK, FOLLOW, POST_RELATIONS } from '../../domain/relations.js';
import { forbidden } from '../../errors.js';
import type { UserResolvers } from '../generated.js';
import { listPage } from './lists.js';

export const User: UserResolvers = {
  id: (user) => String(user.id),
  counts: (user, _, { loaders }) => user.liveCounts ?? loaders.userCounts.load(user.id),
  followedByViewer: (user, _, { viewer, loaders }) => (viewer ? loaders.followedByViewer.load(user.id) : null),

  likedPosts: async (user, { kind, first, after }, ctx) => {
    // The privacy setting as stored now, not as a cached parent (a feed page's author) saw it.
    const owner = ctx.viewer?.id === user.id ? user : await ctx.loaders.user.load(user.id);
    if (!owner || !ctx.deps.visibility.likesVisibleTo(owner, ctx.viewer?.id ?? null)) {
      throw forbidden(`user ${user.id} keeps their ${kind === 'FAV' ? 'favourites' : 'likes'} private`);
    }
    const relation = POST_RELATIONS[kind ?? 'LIKE'].name;
    return listPage(ctx, {
      list: `liked:${relation}:${user.id}`,
      first,
      after,
      scan: (limit, from) => ctx.deps.lists.entitiesOf(user.id, POST, relation, limit, from),
      load: (ids) => ctx.loaders.post.loadMany(ids), // one deleted since the scan loads as null: left out
    });
  },

  bookmarks: (user, { first, after }, ctx) => {
    // Nobody else may list them: the same answer whether or not the user has any.
    if (ctx.viewer?.id !== user.id) throw forbidden('bookmarks are listed to their owner only');
    return listPage(ctx, {
      list: `bookmarks:${user.id}`,
      first,
      after,
      scan: (limit, from) => ctx.deps.lists.entitiesOf(user.id, POST, BOOKMARK.name, limit, from),
      load: (ids) => ctx.loaders.post.loadMany(ids), // one deleted since the scan loads as null: left out
    });
  },

  followers: (user, { first, after }, ctx) =>
    listPage(ctx, {
      list: `followers:${user.id}`,
      first,
      after,
      scan: (limit, from) => ctx.deps.lists.usersOf(USER, user.id, FOLLOW.name, limit, from),
      load: (ids) => ctx.loaders.user.loadMany(ids),
    }),

  following: (user, { first, after }, ctx) =>
    listPage(ctx, {
      list: `following:${user.id}`,
      first,
      after,
      scan: (limit, from) => ctx.deps.lists.entitiesOf(user.id, USER, FOLLOW.name, limit, from),
      load: (ids) => ctx.loaders.user.loadMany(ids),
    }),
};
