// What resolvers, loaders and the WebSocket endpoint depend on, built once per process and
// shared by every request (src/process/api.ts): what reads go through, and the commands
// changes go through.
import type { Auth } from '../auth/jwt.js';
import type { PostCounters } from '../counters/postCounters.js';
import type { UserCounters } from '../counters/userCounters.js';
import type { EntityStore } from '../db/entities.js';
import type { EntityCache } from '../db/entityCache.js';
import type { FeedCache } from '../db/feedCache.js';
import type { PostCache } from '../db/postCache.js';
import type { PostStore } from '../db/posts.js';
import type { RelationLists } from '../db/relationLists.js';
import type { UserStore } from '../db/users.js';
import type { RateLimiter } from '../limits/rateLimiter.js';
import type { DurableReads } from '../recovery/durableReads.js';
import type { RelationStore } from '../relations/relationStore.js';
import type { Announcements } from '../services/announcements.js';
import type { Commands } from '../services/commands.js';
import type { ErasedUsers } from '../services/erasedUsers.js';
import type { Visibility } from '../services/visibility.js';
import type { CursorCodec } from './cursor.js';

export interface ApiDeps {
  auth: Auth;
  users: UserStore;
  posts: PostStore;
  /** Entities a product's own service owns (ENTITY_TYPES). */
  entities: EntityStore;
  postCache: PostCache;
  entityCache: EntityCache;
  feedCache: FeedCache;
  postCounters: PostCounters;
  userCounters: UserCounters;
  relations: RelationStore;
  rateLimiter: RateLimiter;
  lists: RelationLists;
  cursors: CursorCodec;
  /** What answers for entities whose facts Redis lost and has not restored yet. */
  durableReads: DurableReads;
  /** Users whose erasure started: their tokens no longer work. */
  erasedUsers: ErasedUsers;
  /** What a client may see of a post or a user (the one rule; src/services/visibility.ts). */
  visibility: Visibility;
  /** Whether this process hears other processes' deletions and erasures (readiness). */
  announcements: Pick<Announcements, 'listening'>;
  /** Every change a user can make (src/services/): resolvers delegate to these. */
  commands: Commands;
}
