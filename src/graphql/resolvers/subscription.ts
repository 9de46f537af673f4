// Live counts: a subscription watches up to WS_MAX_IDS posts or users; each push is the
// entity itself with the counts its flush pass published (Post.counts / User.counts read
// them), so a client's normalized cache merges them into what is on screen.
import { badInput } from '../../errors.js';
import type { LiveEntity, LivePost, LiveUser } from '../../live/liveCounts.js';
import { ownerType } from '../../services/entities.js';
import { parseWatchedIds } from '../args.js';
import type { GraphQLContext, LiveWatch } from '../context.js';
import type { SubscriptionResolvers } from '../generated.js';

function liveOf(ctx: GraphQLContext): LiveWatch {
  if (!ctx.live) throw badInput('subscriptions are served over WebSocket (graphql-transport-ws) only');
  return ctx.live;
}

export const Subscription: SubscriptionResolvers = {
  postCountsChanged: {
    subscribe: (_, { postIds }, ctx) => {
      const live = liveOf(ctx);
      return live.posts(parseWatchedIds(postIds, 'postIds', live.maxIds));
    },
    resolve: (post: LivePost) => post,
  },
  entityCountsChanged: {
    subscribe: async (_, { type, ids }, ctx) => {
      const live = liveOf(ctx);
      ownerType(type);
      if (ids.length === 0 || ids.length > live.maxIds)
        throw badInput(`ids takes 1 to ${live.maxIds} ids, got ${ids.length}`, { argumentName: 'ids' });
      const found = await Promise.all(ids.map((key) => ctx.deps.entityCache.get(type, key)));
      return live.entities(
        type,
        found.flatMap((entity) => (entity ? [entity.id] : [])),
      );
    },
    resolve: (entity: LiveEntity) => entity,
  },
  userCountsChanged: {
    subscribe: (_, { userIds }, ctx) => {
      const live = liveOf(ctx);
      return live.users(parseWatchedIds(userIds, 'userIds', live.maxIds));
    },
    resolve: (user: LiveUser) => user,
  },
};
