import type { Resolvers } from '../generated.js';
import { EraseAccountPayload, Mutation } from './mutation.js';
import { Post, PostCounts, PostViewerState, ViewCounts } from './post.js';
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
  ViewCounts,
  User,
  EraseAccountPayload,
  DateTime,
};
