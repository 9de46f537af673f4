import { badInput, forbidden, notFound } from '../../errors.js';
import { BODY_MAX_CHARS, checkText, TITLE_MAX_CHARS } from '../../text.js';
import { parseId } from '../args.js';
import { requireViewer } from '../context.js';
import type { MutationResolvers } from '../generated.js';

export const Mutation: MutationResolvers = {
  createPost: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const title = checkText(input.title, 'title', 1, TITLE_MAX_CHARS);
    const body = checkText(input.body, 'body', 0, BODY_MAX_CHARS);
    await ctx.services.rateLimiter.take('writes', { userId: viewer.id });
    const { post, counters } = await ctx.services.posts.create(viewer.id, title, body);
    ctx.services.feedCache.forgetAll();
    await Promise.all([ctx.services.postCounters.initialize(post.id), ctx.services.userCounters.cache(counters)]);
    return post;
  },

  deletePost: async (_, { id }, ctx) => {
    const viewer = requireViewer(ctx);
    const postId = parseId(id);
    await ctx.services.rateLimiter.take('writes', { userId: viewer.id });
    const post = await ctx.loaders.post.load(postId);
    if (!post) throw notFound(`post ${postId} not found`);
    if (post.authorId !== viewer.id) throw forbidden('only the author can delete a post');
    const deleted = await ctx.services.posts.softDelete(postId);
    ctx.loaders.post.clear(postId);
    ctx.services.postCache.forget(postId);
    ctx.services.feedCache.forgetAll();
    if (!deleted) throw notFound(`post ${postId} not found`); // deleted concurrently
    await ctx.services.userCounters.cache(deleted.counters);
    return deleted.post;
  },

  setLikeRelation: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const postId = parseId(input.postId, 'postId');
    const kind = input.kind ?? 'LIKE';
    const post = await ctx.services.postCache.get(postId);
    if (!post) throw notFound(`post ${postId} not found`);
    await ctx.services.rateLimiter.take('changes', { userId: viewer.id });
    const { changed } = await ctx.services.relations.set({
      userId: viewer.id,
      postId,
      authorId: post.authorId,
      kind,
      active: input.active,
      idempotencyKey: input.idempotencyKey,
    });
    // The viewer's state on this post changed: later reads in this request must not reuse it.
    ctx.loaders.viewerState.clear(postId);
    return { post, kind, active: input.active, changed };
  },

  setFollowRelation: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const userId = parseId(input.userId, 'userId');
    if (userId === viewer.id) throw badInput('you cannot follow yourself', { argumentName: 'userId' });
    const user = await ctx.loaders.user.load(userId);
    if (!user) throw notFound(`user ${userId} not found`);
    await ctx.services.rateLimiter.take('changes', { userId: viewer.id });
    const { changed } = await ctx.services.relations.setFollow({
      userId: viewer.id,
      followeeId: userId,
      active: input.active,
      idempotencyKey: input.idempotencyKey,
    });
    ctx.loaders.followedByViewer.clear(userId);
    return { user, active: input.active, changed };
  },

  updateProfile: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    await ctx.services.rateLimiter.take('writes', { userId: viewer.id });
    const user = await ctx.services.users.updateProfile(viewer.id, {
      ...(input.likesPublic != null && { likesPublic: input.likesPublic }),
    });
    ctx.loaders.user.clear(viewer.id).prime(viewer.id, user);
    return user;
  },
};
