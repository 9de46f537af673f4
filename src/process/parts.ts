// The one wiring of a Tally process: from its connections, the stores over PostgreSQL, the
// relation store and counters over Redis, the BullMQ producers and the recovery side, built
// once and the same way for the API (src/process/api.ts), the workers (src/workers.ts), the
// CLIs and the seed. A process with both roles opens two sets, one per connection set.
import type { Config } from '../config.js';
import { createPostCounters } from '../counters/postCounters.js';
import { createRebuilder } from '../counters/rebuild.js';
import { createUserCounters } from '../counters/userCounters.js';
import type { Db } from '../db/client.js';
import { createEntityStore } from '../db/entities.js';
import { createErasureQueries } from '../db/erasureQueries.js';
import { createErasureStore } from '../db/erasures.js';
import { createFactStore } from '../db/facts.js';
import { createPostStore } from '../db/posts.js';
import { createRelationLists } from '../db/relationLists.js';
import { createUserCounterStore } from '../db/userCounters.js';
import { createUserStore } from '../db/users.js';
import { createViewStore } from '../db/views.js';
import { assertKindsOf, KINDS } from '../domain/kinds.js';
import type { EventLogs } from '../events/eventLog.js';
import { createErasureRequests } from '../jobs/erasureJobs.js';
import { createRebuildRequests } from '../jobs/rebuildJobs.js';
import type { Logger } from '../log.js';
import { checkDeployment, countedLayout } from '../recovery/deployment.js';
import { createEntityRestorer } from '../recovery/entityRestore.js';
import { createReadiness } from '../recovery/readiness.js';
import { createRecovery } from '../recovery/recover.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { createRelationStore } from '../relations/relationStore.js';
import { type ConnectionOptions, openConnections } from './connections.js';

/** The PostgreSQL side: one store per table group. */
export function createStores(db: Db) {
  return {
    posts: createPostStore(db),
    entities: createEntityStore(db),
    users: createUserStore(db),
    facts: createFactStore(db),
    erasures: createErasureStore(db),
    erasureQueries: createErasureQueries(db),
    userCounters: createUserCounterStore(db),
    lists: createRelationLists(db),
    views: createViewStore(db),
  };
}

export type Stores = ReturnType<typeof createStores>;

export interface RecoveryPartsDeps {
  redis: ScriptedRedis;
  keys: Keys;
  logger: Logger;
  stores: Pick<Stores, 'facts' | 'userCounters' | 'views'>;
  /** The deployment's event logs: whether events in them outlive Redis (Kafka), and reached PostgreSQL. */
  eventLogs: Pick<EventLogs, 'durableLogSettled' | 'durableLogWritten'>;
  rebuildLockMs: number;
  /** VIEWS_EXACT_UP_TO: how many viewers an exact sketch holds (restored sketches are merged by it). */
  viewsExactUpTo: number;
  /** Entities a recovery walks per page (tests make it small). */
  pageSize?: number;
}

/** The recovery side (readiness, entity restores, the recovery run): the app's and `npm run recover`'s. */
export function createRecoveryParts(deps: RecoveryPartsDeps) {
  const { redis, keys, logger, stores, eventLogs } = deps;
  const readiness = createReadiness(redis, keys);
  const rebuilder = createRebuilder({ redis, keys, lockMs: deps.rebuildLockMs });
  const restorer = createEntityRestorer({
    redis,
    keys,
    facts: stores.facts,
    views: stores.views,
    viewsExactUpTo: deps.viewsExactUpTo,
    readiness,
    rebuilder,
    durableLogSettled: eventLogs.durableLogSettled,
    logger,
  });
  const userCounters = createUserCounters({ redis, keys, store: stores.userCounters });
  const recovery = createRecovery({
    redis,
    keys,
    facts: stores.facts,
    readiness,
    restorer,
    userStore: stores.userCounters,
    userCounters,
    logger,
    durableLogSettled: eventLogs.durableLogSettled,
    pageSize: deps.pageSize,
  });
  /** Whether anything outlives Redis (facts or views in PostgreSQL, events in Kafka): then a Redis without its record lost its data. */
  const hasDurableState = async () =>
    (await stores.facts.hasAny()) || (await stores.views.hasAny()) || (await eventLogs.durableLogWritten());
  return { readiness, rebuilder, restorer, recovery, userCounters, hasDurableState };
}

export function openParts(config: Config, options: ConnectionOptions) {
  assertKindsOf(config);
  const connections = openConnections(config, options);
  const { db, redis, jobsRedis, keys, logger, eventLogs } = connections;
  const stores = createStores(db);
  const recovery = createRecoveryParts({
    redis,
    keys,
    logger,
    stores,
    eventLogs,
    rebuildLockMs: config.rebuildLockMs,
    viewsExactUpTo: config.views.exactUpTo,
  });
  // BullMQ producers: reads that find a counter missing ask the workers to rebuild it; an
  // erasure is one job per user.
  const queues = { rebuilds: createRebuildRequests(jobsRedis, keys, logger), erasures: createErasureRequests(jobsRedis, keys) };
  const counters = {
    users: recovery.userCounters,
    posts: createPostCounters({ redis, keys, onMissing: (entity) => queues.rebuilds.request(entity) }),
  };
  const relations = createRelationStore(redis, keys, {
    // Half the execution timeout: a write refused with "try again" answers before its request is abandoned.
    restore: (entity) => recovery.restorer.restore(entity, config.limits.executionTimeoutMs / 2),
    writeDeadlineMs: config.redisTimeouts.commandTimeoutMs,
  });

  return {
    ...connections,
    stores,
    queues,
    counters,
    relations,
    recovery,

    /** Checks the Redis against this deployment (partition count, counted kinds) and marks what it must recover. */
    checkDeployment: () => checkDeployment(redis, keys, recovery.hasDurableState, countedLayout(KINDS)),

    async close(): Promise<void> {
      await Promise.all([queues.rebuilds.close(), queues.erasures.close()]);
      await connections.close();
    },
  };
}

export type Parts = ReturnType<typeof openParts>;
