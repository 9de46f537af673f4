// Live counts: a subscription watches up to WS_MAX_IDS posts or users; each push is the
// entity itself with the counts its flush pass published (Post.counts / User.counts read
// them), so a client's normalized cache merges them into what is on screen.
import { badInput } from '../../errors.js';
import type { LivePost, LiveUser } from '../../live/liveCounts.js';
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
  userCountsChanged: {
    subscribe: (_, { userIds }, ctx) => {
      const live = liveOf(ctx);
      return live.users(parseWatchedIds(userIds, 'userIds', live.maxIds));
    },
    resolve: (user: LiveUser) => user,
  },
};
