// The API side of a process: the stores, caches and counters resolvers read, and the
// commands they delegate changes to. Built once per process; the seed builds the same.
import { createAuth } from '../auth/jwt.js';
import { createPostCounters } from '../counters/postCounters.js';
import { createUserCounters } from '../counters/userCounters.js';
import { createErasureStore } from '../db/erasures.js';
import { createFeedCache } from '../db/feedCache.js';
import { createPostCache } from '../db/postCache.js';
import { createPostStore } from '../db/posts.js';
import { createRelationLists } from '../db/relationLists.js';
import { createUserCounterStore } from '../db/userCounters.js';
import { createUserStore } from '../db/users.js';
import type { BudgetName } from '../domain/budgets.js';
import { POST } from '../domain/entities.js';
import { createCursorCodec } from '../graphql/cursor.js';
import type { Services } from '../graphql/services.js';
import { createErasureRequests } from '../jobs/erasureJobs.js';
import { createRebuildRequests } from '../jobs/rebuildJobs.js';
import { createRateLimiter } from '../limits/rateLimiter.js';
import { createDurableReads } from '../recovery/durableReads.js';
import type { RedisClient } from '../redis/client.js';
import { createRelationStore } from '../relations/relationStore.js';
import { createAnnouncements } from '../services/announcements.js';
import { chargeTo, free } from '../services/charges.js';
import { createCommands } from '../services/commands.js';
import { createErasedUsers } from '../services/erasedUsers.js';
import { createVisibility } from '../services/visibility.js';
import type { Connections } from './connections.js';

export interface ApiServiceOptions {
  /** Called when a client is refused for an empty budget (a metric). */
  onRateLimited?: (budget: BudgetName) => void;
  /** Operator tools act for the service: their commands draw from no client's budget. */
  operator?: boolean;
  /** A connection of its own in subscriber mode on which announcements arrive (API processes). */
  subscriber?: RedisClient | null;
}

export function createApiServices(connections: Connections, options: ApiServiceOptions = {}) {
  const { config, db, redis, keys, logger, recovery } = connections;
  // BullMQ producer: reads that find a counter missing ask the workers to rebuild it.
  const rebuildRequests = createRebuildRequests(connections.jobsRedis, keys, logger);
  const posts = createPostStore(db);
  const users = createUserStore(db);
  const postCache = createPostCache(posts, config.postCacheTtlMs);
  const feedCache = createFeedCache(posts, config.feedCacheTtlMs);
  const userCounters = createUserCounters({ redis, keys, store: createUserCounterStore(db) });
  const postCounters = createPostCounters({ redis, keys, onMissing: (id) => rebuildRequests.request({ type: POST, id }) });
  const relations = createRelationStore(redis, keys, {
    restore: (entity) => recovery.restorer.restore(entity),
    writeDeadlineMs: config.redisTimeouts.commandTimeoutMs,
  });
  const erasures = createErasureStore(db);
  const erasureRequests = createErasureRequests(connections.jobsRedis, keys);
  // Deletions and erasures reach every API process's caches at once; one that missed some
  // (its connection dropped or went quiet) forgets its caches and re-reads the erasure list,
  // and does so every heartbeat until it hears again (src/services/announcements.ts).
  const announcements = createAnnouncements({
    publisher: redis,
    subscriber: options.subscriber ?? null,
    channels: { erased: keys.erasuresChannel(), deleted: keys.deletionsChannel() },
    heartbeatMs: config.announcementHeartbeatMs,
    onResync: async () => {
      postCache.clear();
      feedCache.forgetAll();
      await erasedUsers.refresh();
    },
    logger,
  });
  const erasedUsers = createErasedUsers({ store: erasures, announcements, refreshMs: config.erasure.refreshMs, logger });
  announcements.on('deleted', (postId) => {
    postCache.forget(postId);
    feedCache.forgetAll();
  });
  const visibility = createVisibility({ erasedUsers });
  const rateLimiter = createRateLimiter({ redis, keys, budgets: config.rateLimits, onRejected: options.onRateLimited });
  const services: Services = {
    auth: createAuth(config.jwtSecret, config.tokenRules),
    users,
    posts,
    postCache,
    feedCache,
    userCounters,
    postCounters,
    relations,
    rateLimiter,
    lists: createRelationLists(db),
    cursors: createCursorCodec(config.cursorSecret),
    durableReads: createDurableReads(recovery.facts),
    erasedUsers,
    visibility,
    announcements,
    commands: createCommands({
      erasures,
      erasedUsers,
      visibility,
      announcePostDeleted: (postId) => announcements.announce('deleted', postId),
      requestErasure: (userId) => erasureRequests.request(userId),
      posts,
      users,
      postCache,
      feedCache,
      postCounters,
      userCounters,
      relations,
      charge: options.operator ? free : chargeTo(rateLimiter),
    }),
  };
  return {
    services,
    /** Loads the erasures in progress and listens for announcements. */
    async start() {
      await erasedUsers.start();
      await announcements.start();
    },
    async close() {
      announcements.stop();
      erasedUsers.stop();
      await Promise.all([rebuildRequests.close(), erasureRequests.close()]);
    },
  };
}
