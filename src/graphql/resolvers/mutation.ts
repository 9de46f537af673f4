// Mutations map their arguments and delegate to the commands (src/services/); what is left
// here is GraphQL's own: this request's loaders must not answer from before the change.

import { BOOKMARK, POST_RELATIONS, type Relation } from '../../domain/relations.js';
import { MAX_VIEWS_PER_REQUEST } from '../../domain/views.js';
import { oneToMax, parseId, parseWatchedIds } from '../args.js';
import type { GraphQLContext } from '../context.js';
import { requireAccountHolder, requireService, requireViewer } from '../context.js';
import type { EraseAccountPayloadResolvers, MutationResolvers } from '../generated.js';
import { reactionNamed } from './reactions.js';

/** The viewer's `relation` on a post set to `active`; this request's later reads see the change. */
async function setOnPost(
  ctx: GraphQLContext,
  input: { postId: string; active: boolean; idempotencyKey?: string | null },
  relation: Relation,
) {
  const viewer = requireViewer(ctx);
  const postId = parseId(input.postId, 'postId');
  const result = await ctx.deps.commands.relations.setOnPost(viewer.id, {
    postId,
    relation,
    active: input.active,
    idempotencyKey: input.idempotencyKey,
  });
  ctx.loaders.viewerState.clearAll(); // keyed by (post, kinds): a request makes few changes
  return result;
}

/** The viewer's `relation` on an entity a product owns set to `active`; this request's later reads see the change. */
async function setOnEntity(
  ctx: GraphQLContext,
  input: { type: string; id: string; active: boolean; idempotencyKey?: string | null },
  relation: Relation,
) {
  const viewer = requireViewer(ctx);
  const result = await ctx.deps.commands.relations.setOnEntity(viewer.id, {
    type: input.type,
    key: input.id,
    relation,
    active: input.active,
    idempotencyKey: input.idempotencyKey,
  });
  ctx.loaders.viewerState.clearAll();
  ctx.loaders.ownedEntity.prime({ type: result.entity.type, key: result.entity.key }, result.entity);
  return result;
}

export const Mutation: MutationResolvers = {
  createPost: (_, { input }, ctx) => ctx.deps.commands.posts.create(requireViewer(ctx).id, input),

  deletePost: async (_, { id }, ctx) => {
    const viewer = requireViewer(ctx);
    const postId = parseId(id);
    try {
      return await ctx.deps.commands.posts.delete(viewer.id, postId);
    } finally {
      ctx.loaders.post.clear(postId);
    }
  },

  setLikeRelation: async (_, { input }, ctx) => {
    const kind = input.kind ?? 'LIKE';
    return { ...(await setOnPost(ctx, input, POST_RELATIONS[kind])), kind };
  },

  setReaction: async (_, { input }, ctx) => {
    const relation = reactionNamed(input.content);
    return { ...(await setOnPost(ctx, input, relation)), content: input.content };
  },

  setBookmark: (_, { input }, ctx) => setOnPost(ctx, input, BOOKMARK),

  setEntityRelation: async (_, { input }, ctx) => {
    const kind = input.kind ?? 'LIKE';
    return { ...(await setOnEntity(ctx, input, POST_RELATIONS[kind])), kind };
  },

  setEntityReaction: async (_, { input }, ctx) => ({
    ...(await setOnEntity(ctx, input, reactionNamed(input.content))),
    content: input.content,
  }),

  setEntityBookmark: (_, { input }, ctx) => setOnEntity(ctx, input, BOOKMARK),

  setFollowRelation: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const followeeId = parseId(input.userId, 'userId');
    const result = await ctx.deps.commands.relations.follow(viewer.id, {
      followeeId,
      active: input.active,
      idempotencyKey: input.idempotencyKey,
    });
    ctx.loaders.followedByViewer.clear(followeeId);
    return result;
  },

  // A token's user is counted by id; a request without one by its client's address.
  recordViews: async (_, { input }, ctx) => {
    const client = ctx.viewer ? { userId: ctx.viewer.id } : { address: ctx.scope.client };
    return { views: await ctx.deps.commands.views.recordOnPosts(client, parseWatchedIds(input.postIds, 'postIds', MAX_VIEWS_PER_REQUEST)) };
  },

  recordEntityViews: async (_, { input }, ctx) => {
    const client = ctx.viewer ? { userId: ctx.viewer.id } : { address: ctx.scope.client };
    const ids = oneToMax(input.ids, 'ids', MAX_VIEWS_PER_REQUEST);
    return { views: await ctx.deps.commands.views.recordOnEntities(client, input.type, ids) };
  },

  eraseAccount: (_, { input }, ctx) => ctx.deps.commands.accounts.erase(requireAccountHolder(ctx), input),

  registerEntities: async (_, { input }, ctx) => ({
    applied: await ctx.deps.commands.entities.register(requireService(ctx), input.entities),
  }),

  deleteEntities: async (_, { input }, ctx) => ({
    applied: await ctx.deps.commands.entities.delete(requireService(ctx), input.entities),
  }),

  updateProfile: async (_, { input }, ctx) => {
    const viewer = requireViewer(ctx);
    const user = await ctx.deps.commands.profiles.update(viewer.id, input);
    ctx.loaders.user.clear(viewer.id).prime(viewer.id, user);
    return user;
  },
};

export const EraseAccountPayload: EraseAccountPayloadResolvers = {
  userId: (payload) => String(payload.userId),
};
