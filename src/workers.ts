// The background side of a process (ROLE=all or worker): the aggregator and the fact
// persister consuming the event log, the flush jobs folding aggregates into counters, the
// view snapshots persisting views, the rebuild worker, reconciliation, the user counters
// verifier, the erasure, the owning service's entity lifecycle messages and the purge of
// deleted entities, and the watch that recovers a Redis that lost its data. Its own Redis
// connections and PostgreSQL pool, so worker traffic never queues behind (or counts as) the
// API's, and background batches never take the connections requests wait for.
import { createAggregator } from './consumers/aggregator.js';
import { createEntityLifecycle } from './consumers/entityLifecycle.js';
import { createFactPersister } from './consumers/factPersister.js';
import { relayFor } from './consumers/relay.js';
import { createFlusher } from './counters/flush.js';
import { createReconciler } from './counters/reconcile.js';
import { createUserVerifier } from './counters/verifyUsers.js';
import { createViewSnapshots } from './counters/viewSnapshots.js';
import { TYPES } from './domain/kinds.js';
import { createErasureWorker } from './jobs/erasureJobs.js';
import { createFlushJobs, partitionGroups } from './jobs/flushJobs.js';
import { createRebuildWorker } from './jobs/rebuildJobs.js';
import { createScheduledJobs } from './jobs/scheduledJobs.js';
import type { Metrics } from './metrics.js';
import type { Parts } from './process/parts.js';
import { createReactionIndexBuilder } from './recovery/reactionIndex.js';
import { createRecoveryWatch } from './recovery/recoveryWatch.js';
import { announcementChannels, createAnnouncements, heardEverywhereWithinMs } from './services/announcements.js';
import { createEntityService } from './services/entities.js';
import { createEntityPurge } from './services/entityPurge.js';
import { createEraser } from './services/eraser.js';

export const RECONCILE_QUEUE = 'tally-reconcile';
export const ENTITY_PURGE_QUEUE = 'tally-entity-purge';
export const VIEWS_QUEUE = 'tally-views';

/** Takes its own parts (src/process/parts.ts) and closes them when it stops. */
export function createWorkers(parts: Parts, metrics: Metrics) {
  const { config, keys, logger, db, redis, jobsRedis, eventLogs, stores, queues, counters, recovery } = parts;
  const userCounters = counters.users;
  const flusher = createFlusher({ redis, keys, viewsExactUpTo: config.views.exactUpTo });
  const aggregator = createAggregator({ redis, keys, logger });
  const eventLog = eventLogs.consumed;
  const relay = relayFor(eventLogs, logger);
  const aggregation = aggregator.subscribe(eventLog);
  const persistence = createFactPersister({ db, redis, keys, userCounters, logger }).subscribe(eventLog);
  const { rebuilder, readiness } = recovery;
  const rebuildWorker = createRebuildWorker({
    connection: jobsRedis,
    keys,
    rebuilder,
    logger,
    lockMs: config.jobLockMs,
    metrics,
    rebuildUser: (id) => userCounters.rebuild(id),
  });
  const reconciler = createReconciler({
    redis,
    keys,
    facts: stores.facts,
    posts: stores.posts,
    entities: stores.entities,
    eventLog,
    requestRebuild: queues.rebuilds.request,
    notReady: readiness.notReady,
    metrics,
    logger,
    sampleSize: config.reconcileSample,
  });
  const userVerifier = createUserVerifier({
    redis,
    keys,
    store: stores.userCounters,
    userCounters,
    requestRebuild: queues.rebuilds.request,
    metrics,
    logger,
    sampleSize: config.userVerifySample,
  });
  const reconcileJobs = createScheduledJobs<{ check: 'posts' | 'users' }>({
    queue: RECONCILE_QUEUE,
    connection: jobsRedis,
    keys,
    logger,
    schedules: [
      { id: 'reconcile', everyMs: config.reconcileIntervalMs, data: { check: 'posts' } },
      { id: 'verify-users', everyMs: config.userVerifyIntervalMs, data: { check: 'users' } },
    ],
    run: ({ check }) => (check === 'users' ? userVerifier.run() : reconciler.run()),
  });
  const flushJobs = createFlushJobs({
    connection: jobsRedis,
    keys,
    flusher,
    intervalMs: config.flushIntervalMs,
    partitionsPerJob: config.flushPartitionsPerJob,
    logger,
    onFlushed: async ({ partitions, folded, rebuilt, ms }) => {
      metrics.flushDuration.observe(ms / 1000);
      metrics.flushBatch.observe(folded);
      if (rebuilt > 0) metrics.rebuilds.inc({ via: 'flush', outcome: 'done' }, rebuilt);
      // Once per interval (by the job that owns partition 0): how complete user counters are.
      if (partitions.includes(0)) await userCounters.publishAsOf();
    },
  });
  // Views' distinct viewers are counted and views reach PostgreSQL by snapshot, per group of partitions as the flush folds them.
  const viewSnapshots = createViewSnapshots({ redis, keys, store: stores.views, foldViews: flusher.foldViews });
  const viewJobs = createScheduledJobs<{ partitions: number[] }>({
    queue: VIEWS_QUEUE,
    connection: jobsRedis,
    keys,
    logger,
    schedules: partitionGroups(keys.partitions, config.flushPartitionsPerJob).map((partitions, i) => ({
      id: `views:${i}`,
      everyMs: config.views.persistIntervalMs,
      data: { partitions },
    })),
    run: async ({ partitions }) => ({ persisted: await viewSnapshots.persistPartitions(partitions) }),
  });

  const eraser = createEraser({
    store: stores.erasures,
    queries: stores.erasureQueries,
    relations: parts.relations,
    userCounters,
    redis,
    keys,
    batchSize: config.erasure.batchSize,
    batchLockMs: config.jobLockMs,
    heardWithinMs: Math.min(config.erasure.refreshMs, heardEverywhereWithinMs(config.announcementHeartbeatMs)),
    logger,
  });
  const erasureWorker = createErasureWorker({
    connection: jobsRedis,
    keys,
    runBatch: (userId, pace) => eraser.runBatch(userId, pace),
    busyPercent: config.erasure.busyPercent,
    lockMs: config.jobLockMs,
    logger,
  });
  // The owning service's lifecycle messages, applied as its mutations are; a deletion is
  // announced to every API process (this one only publishes: it keeps no caches).
  const announcements = createAnnouncements({
    publisher: redis,
    subscriber: null,
    channels: announcementChannels(keys),
    heartbeatMs: config.announcementHeartbeatMs,
    onResync: async () => {},
    logger,
  });
  const entityService = createEntityService({
    entities: stores.entities,
    postCounters: counters.posts,
    announceEntityDeleted: (id) => announcements.announce('entityDeleted', id),
    logger,
  });
  const applyLifecycle = createEntityLifecycle({
    applyRegistrations: entityService.applyRegistrations,
    applyDeletions: entityService.applyDeletions,
    counted: (op, outcome, n) => {
      if (n > 0) metrics.lifecycleMessages.inc({ op, outcome }, n);
    },
    logger,
  });
  // A deployment whose services own no type has no lifecycle stream or topic to read, and no entities to purge.
  const ownsTypes = TYPES.owned.length > 0;
  const lifecycle = ownsTypes ? eventLogs.lifecycle : null;
  const entityPurge = createEntityPurge({
    entities: stores.entities,
    facts: stores.facts,
    views: stores.views,
    relations: parts.relations,
    postCounters: counters.posts,
    redis,
    keys,
    retentionMs: config.deletedEntities.retentionMs,
    heardWithinMs: heardEverywhereWithinMs(config.announcementHeartbeatMs),
    batch: config.deletedEntities.purgeBatch,
    logger,
  });
  const purgeJobs = ownsTypes
    ? createScheduledJobs({
        queue: ENTITY_PURGE_QUEUE,
        connection: jobsRedis,
        keys,
        logger,
        schedules: [{ id: 'purge-entities', everyMs: config.deletedEntities.purgeIntervalMs, data: {} }],
        run: () => entityPurge.run(),
      })
    : null;

  /** Erasures still running get their job again (it is one job per user: no duplicates). */
  const resumeErasures = async () => {
    for (const row of await stores.erasures.running()) await queues.erasures.request(row.userId);
  };

  /** Job schedulers live in Redis: after Redis lost its data they must be created again. */
  const ensureSchedules = async () => {
    await flushJobs.ensure();
    await viewJobs.ensure();
    await reconcileJobs.ensure();
    await purgeJobs?.ensure();
    await resumeErasures();
  };
  const reactionIndex = createReactionIndexBuilder(redis, keys, logger);
  const recoveryWatch = createRecoveryWatch({ readiness, recovery: recovery.recovery, reactionIndex, logger, ensureSchedules });

  return {
    redis,
    flusher,
    aggregator,
    rebuilder,
    rebuildWorker,
    eventLog,
    relay,
    reconciler,
    userVerifier,
    eraser,
    entityPurge,
    viewSnapshots,

    async start() {
      await relay?.start();
      await aggregation.start();
      await persistence.start();
      await lifecycle?.start(applyLifecycle);
      await flushJobs.start();
      await viewJobs.start();
      await reconcileJobs.start();
      await purgeJobs?.start();
      rebuildWorker.start();
      erasureWorker.start();
      await resumeErasures();
      recoveryWatch.start();
    },

    /** Finishes the batch and the fold in hand, acknowledges, then closes connections. */
    async stop() {
      await recoveryWatch.stop();
      await rebuildWorker.stop();
      await erasureWorker.stop();
      await reconcileJobs.stop();
      await purgeJobs?.stop();
      await flushJobs.stop();
      await viewJobs.stop();
      await lifecycle?.stop();
      await persistence.stop();
      await aggregation.stop();
      await relay?.stop();
      await parts.close();
    },
  };
}

export type Workers = ReturnType<typeof createWorkers>;
