import { forbidden, notFound } from '../../errors.js';
import { BODY_MAX_CHARS, TITLE_MAX_CHARS, checkText, parseId } from '../args.js';
import { requireViewer } from '../context.js';
import type { MutationResolvers } from '../generated.js';

export const Mutation: MutationResolvers = {
  createPost: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const title = checkText(input.title, 'title', 1, TITLE_MAX_CHARS);
    const body = checkText(input.body, 'body', 0, BODY_MAX_CHARS);
    return ctx.services.posts.create(viewer.id, title, body);
  },

  deletePost: async (_, { id }, ctx) => {
    const viewer = requireViewer(ctx);
    const postId = parseId(id);
    const post = await ctx.loaders.post.load(postId);
    if (!post) throw notFound(`post ${postId} not found`);
    if (post.authorId !== viewer.id) throw forbidden('only the author can delete a post');
    const deleted = await ctx.services.posts.softDelete(postId);
    ctx.loaders.post.clear(postId);
    if (!deleted) throw notFound(`post ${postId} not found`); // deleted concurrently
    return deleted;
  },
};
