// The long-lived pieces resolvers use, built once per process and shared by every request.
import type { Auth } from '../auth/jwt.js';
import type { PostStore } from '../db/posts.js';
import type { UserStore } from '../db/users.js';
import type { CursorCodec } from './cursor.js';

export interface Services {
  auth: Auth;
  users: UserStore;
  posts: PostStore;
  cursors: CursorCodec;
}
