import { countOf } from '../../counters/postCounters.js';
import { POST } from '../../domain/entities.js';
import { FAV, LIKE, POST_RELATIONS } from '../../domain/relations.js';
import { notFound } from '../../errors.js';
import type { PostCountsResolvers, PostResolvers, PostViewerStateResolvers } from '../generated.js';
import { listPage } from './lists.js';

export const Post: PostResolvers = {
  id: (post) => String(post.id),
  // Feed pages come with their authors, answered without a promise; access checks still load
  // users fresh (User.likedPosts).
  author: (post, _, { loaders, deps }) =>
    post.author ??
    loaders.user.load(post.authorId).then((author) => {
      if (author) return author;
      // The author's erasure began while this request ran: the post is gone with them.
      if (deps.erasedUsers.has(post.authorId)) throw notFound(`post ${post.id} not found`);
      // A post row always references its author (foreign key); any other miss means a broken store.
      throw new Error(`author ${post.authorId} of post ${post.id} is missing`);
    }),
  // A pushed post carries its counts, resolved once for every socket that watches it.
  counts: (post, _, { loaders }) => post.liveCounts ?? loaders.counts.load(post.id),
  myState: (post, _, { viewer, loaders }) => (viewer ? loaders.viewerState.load(post.id) : null),

  likers: (post, { kind, first, after }, ctx) => {
    const relation = POST_RELATIONS[kind ?? 'LIKE'].name;
    return listPage(ctx, {
      list: `likers:${relation}:${post.id}`,
      first,
      after,
      // Private likes show only to their owner.
      scan: (limit, from) => ctx.deps.lists.usersOf(POST, post.id, relation, limit, from, { privateExceptFor: ctx.viewer?.id ?? null }),
      load: (ids) => ctx.loaders.user.loadMany(ids),
      // Checked again on the loaded user: one who turned private since the scan stays hidden.
      keep: (user) => ctx.deps.visibility.likesVisibleTo(user, ctx.viewer?.id ?? null),
    });
  },
};

// The counts and viewer state hold every kind; these fields are the like's and the favourite's.
export const PostCounts: PostCountsResolvers = {
  likes: (counts) => countOf(counts, LIKE),
  favs: (counts) => countOf(counts, FAV),
};

export const PostViewerState: PostViewerStateResolvers = {
  liked: (state) => state.has(LIKE.name),
  faved: (state) => state.has(FAV.name),
};
