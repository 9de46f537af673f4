// The API side of a process, on its parts (src/process/parts.ts): the caches, budgets and
// announcements resolvers read through, and the commands they delegate changes to.
import { createAuth } from '../auth/jwt.js';
import { createEntityCache } from '../db/entityCache.js';
import { createFeedCache } from '../db/feedCache.js';
import { createPostCache } from '../db/postCache.js';
import type { BudgetName } from '../domain/budgets.js';
import type { ApiDeps } from '../graphql/apiDeps.js';
import { createCursorCodec } from '../graphql/cursor.js';
import { createRateLimiter } from '../limits/rateLimiter.js';
import { createDurableReads } from '../recovery/durableReads.js';
import { isCluster, type RedisClient } from '../redis/client.js';
import { createScripts } from '../redis/scripts.js';
import { announcementChannels, createAnnouncements } from '../services/announcements.js';
import { chargeTo, free } from '../services/charges.js';
import { createCommands } from '../services/commands.js';
import { createErasedUsers } from '../services/erasedUsers.js';
import { createViewerDigests } from '../services/viewerDigests.js';
import { createVisibility } from '../services/visibility.js';
import type { Parts } from './parts.js';

export interface ApiOptions {
  /** Called when a client is refused for an empty budget (a metric). */
  onRateLimited?: (budget: BudgetName) => void;
  /** Operator tools act for the service: their commands draw from no client's budget. */
  operator?: boolean;
  /** A connection of its own in subscriber mode on which announcements arrive (API processes). */
  subscriber?: RedisClient | null;
}

export function createApi(parts: Parts, options: ApiOptions = {}) {
  const { config, redis, keys, logger, stores, counters, relations, queues } = parts;
  const postCache = createPostCache(stores.posts, config.postCacheTtlMs);
  const entityCache = createEntityCache(stores.entities, config.postCacheTtlMs);
  const feedCache = createFeedCache(stores.posts, config.feedCacheTtlMs);
  // Deletions and erasures reach every API process's caches at once; one that missed some
  // (its connection dropped or went quiet) forgets its caches and re-reads the erasure list,
  // and does so every heartbeat until it hears again (src/services/announcements.ts).
  const announcements = createAnnouncements({
    publisher: redis,
    subscriber: options.subscriber ?? null,
    channels: announcementChannels(keys),
    heartbeatMs: config.announcementHeartbeatMs,
    onResync: async () => {
      postCache.clear();
      entityCache.clear();
      feedCache.forgetAll();
      await erasedUsers.refresh();
    },
    logger,
  });
  const erasedUsers = createErasedUsers({ store: stores.erasures, announcements, refreshMs: config.erasure.refreshMs, logger });
  announcements.on('deleted', (postId) => {
    postCache.forget(postId);
    feedCache.forgetAll();
  });
  announcements.on('entityDeleted', (id) => entityCache.forget(id));
  const visibility = createVisibility({ erasedUsers });
  const rateLimiter = createRateLimiter({ redis, keys, budgets: config.rateLimits, onRejected: options.onRateLimited });
  const deps: ApiDeps = {
    auth: createAuth(config.jwtSecret, config.tokenRules, config.serviceSecret),
    users: stores.users,
    posts: stores.posts,
    entities: stores.entities,
    postCache,
    entityCache,
    feedCache,
    userCounters: counters.users,
    postCounters: counters.posts,
    relations,
    rateLimiter,
    lists: stores.lists,
    cursors: createCursorCodec(config.cursorSecret),
    durableReads: createDurableReads(stores.facts, stores.views),
    erasedUsers,
    visibility,
    announcements,
    commands: createCommands({
      erasures: stores.erasures,
      erasedUsers,
      visibility,
      announcePostDeleted: (postId) => announcements.announce('deleted', postId),
      requestErasure: (userId) => queues.erasures.request(userId),
      posts: stores.posts,
      entities: stores.entities,
      entityCache,
      announceEntityDeleted: (id) => announcements.announce('entityDeleted', id),
      logger,
      users: stores.users,
      postCache,
      feedCache,
      postCounters: counters.posts,
      userCounters: counters.users,
      relations,
      charge: options.operator ? free : chargeTo(rateLimiter),
      scripts: createScripts(redis, keys),
      keys,
      viewRules: config.views,
      viewerDigests: createViewerDigests(config.views.digestSecret),
      viewsBudget: options.operator ? null : rateLimiter.allOrNothing('views'),
      perPartition: isCluster(redis),
    }),
  };
  return {
    deps,
    /** Loads the erasures in progress and listens for announcements. */
    async start() {
      await erasedUsers.start();
      await announcements.start();
    },
    stop() {
      announcements.stop();
      erasedUsers.stop();
    },
  };
}
