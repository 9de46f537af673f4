// The long-lived pieces resolvers use, built once per process and shared by every request.
import type { Auth } from '../auth/jwt.js';
import type { PostCounters } from '../counters/postCounters.js';
import type { PostCache } from '../db/postCache.js';
import type { PostStore } from '../db/posts.js';
import type { UserStore } from '../db/users.js';
import type { RelationStore } from '../relations/relationStore.js';
import type { CursorCodec } from './cursor.js';

export interface Services {
  auth: Auth;
  users: UserStore;
  posts: PostStore;
  postCache: PostCache;
  postCounters: PostCounters;
  relations: RelationStore;
  cursors: CursorCodec;
}
