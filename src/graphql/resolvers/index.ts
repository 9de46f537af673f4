import type { Resolvers } from '../generated.js';
import { EraseAccountPayload, Mutation } from './mutation.js';
import { Post, PostCounts, PostViewerState, ReactionGroup } from './post.js';
import { Query } from './query.js';
import { DateTime } from './scalars.js';
import { Subscription } from './subscription.js';
import { User } from './user.js';

export const resolvers: Resolvers = {
  Query,
  Mutation,
  Subscription,
  Post,
  PostCounts,
  PostViewerState,
  ReactionGroup,
  User,
  EraseAccountPayload,
  DateTime,
};
