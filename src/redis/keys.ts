// The one module that builds Redis key names (schema v1, docs/design.md). Nothing else
// concatenates keys; Lua scripts that reach per-entity keys get the prefixes from here, and
// the names they build themselves from LUA_KEY_NAMES (inlined as includes/keyNames).
import { createHash } from 'node:crypto';
import { type EntityRef, entityName } from '../domain/entities.js';
import { entityPartition, userPartition } from './partition.js';

export const SCHEMA = 'v1';

/** Fields of the deployment record (`meta`), src/recovery/deployment.ts. */
export const META = {
  /** The partition count the data was written with. */
  partitions: 'partitions',
  /** 'complete' while the event log holds every event ever written; 'trimmed' once it does not. */
  history: 'history',
  /** Set once partitions carry readiness markers. */
  readiness: 'readiness',
  /** The counted kinds and their slots the counters were written with (src/recovery/deployment.ts). */
  kinds: 'kinds',
  /** 'whole' once every partition's reactions are indexed (src/recovery/reactionIndex.ts). */
  reactionIndex: 'reactionIndex',
} as const;

/**
 * A client's idempotency key as its records name it: 128 bits of its SHA-256. The key itself
 * may be 255 characters of 4 bytes each, held twice for a day under `noeviction`.
 */
const keyDigest = (key: string) => createHash('sha256').update(key).digest('base64url').slice(0, 22);

/**
 * The key kinds Lua scripts name themselves (an entity's relation keys and readiness, reached
 * from a partition tag): one spelling, here, that src/redis/luaScripts.ts hands the scripts as
 * the table `KEY` (`prefix .. KEY.bitmap .. tag ...`).
 */
export const LUA_KEY_NAMES = {
  ready: 'ready:',
  restored: 'restored:',
  bitmap: 'bm:',
  chunkIndex: 'bmi:',
  arrayBlock: 'ra:',
  arrayIndex: 'rai:',
  dirty: 'dirty:',
  aggregation: 'agg:',
  viewers: 'vu:',
  viewsPending: 'vpend:',
  viewBuffer: 'vbuf:',
  /** An entity's reaction index, user -> held reactions (lua/includes/reactionIndex.lua). */
  reactionIndex: 'rx:',
  /** Marks a partition whose every entity's reactions are indexed. */
  reactionsIndexed: 'rxi:',
  /** The schema version in per-entity counter keys (`agg:{pN}:v1:<type>:<id>`). */
  schema: `${SCHEMA}:`,
} as const;
const K = LUA_KEY_NAMES;

/** Idempotency records (`idem:` in the entity's slot, `idemu:` in the user's): both name the user after their tag. */
const IDEMPOTENCY_KINDS = ['idem:', 'idemu:'] as const;

export function createKeys(prefix: string, partitions: number) {
  const p = (n: number) => `{p${n}}`;
  const u = (n: number) => `{u${n}}`;
  const partitionOf = (entity: EntityRef) => entityPartition(entity.type, entity.id, partitions);
  const name = entityName;

  const perPartition = {
    /** Outbox / event log partition (stream). */
    outbox: (n: number) => `${prefix}ob:${p(n)}`,
    /** Entities with pending deltas in their aggregation hash. */
    dirty: (n: number) => `${prefix}${K.dirty}${p(n)}`,
    /** The dirty set a flush is folding right now (renamed from `dirty`). */
    folding: (n: number) => `${prefix}dirtyfold:${p(n)}`,
    /** Aggregator state: applied position per source, last applied event id. */
    aggState: (n: number) => `${prefix}aggstate:${p(n)}`,
    /** Flush state: the asOf a fold in progress will publish. */
    flushState: (n: number) => `${prefix}flushstate:${p(n)}`,
    /** Epoch ms: every change acknowledged before it is in the partition's counters. */
    flushed: (n: number) => `${prefix}flushed:${p(n)}`,
    /** Per-entity rebuild watermarks: events at or below are already in the counters. */
    rebuilt: (n: number) => `${prefix}rw:${p(n)}`,
    /** Entities replay recomputed and has not switched yet. */
    replayedEntities: (n: number) => `${prefix}rpl:${p(n)}:entities`,
    /** Prefix of replay's per-entity sums (hash: counter slot -> count). */
    replayedPrefix: (n: number) => `${prefix}rpl:${p(n)}:${SCHEMA}:`,
    /** Present when Redis holds every fact of the partition (absent after a data loss until recovered). */
    ready: (n: number) => `${prefix}${K.ready}${p(n)}`,
    /** Present when every entity of the partition has its reaction index (lua/includes/reactionIndex.lua). */
    reactionsIndexed: (n: number) => `${prefix}${K.reactionsIndexed}${p(n)}`,
    /** Entities of the partition restored from PostgreSQL so far, while it is not ready (a set). */
    restored: (n: number) => `${prefix}${K.restored}${p(n)}`,
    /** Newest event id of the partition the fact persister has written to PostgreSQL. */
    persisted: (n: number) => `${prefix}persisted:${p(n)}`,
    /** Consumer lease of one partition for one group. */
    lease: (n: number, group: string) => `${prefix}lease:${p(n)}:${group}`,
    // Prefixes for keys a script builds per entity (`<prefix><type>:<id>`).
    aggPrefix: (n: number) => `${prefix}${K.aggregation}${p(n)}:${K.schema}`,
    countersPrefix: (n: number) => `${prefix}cnt:${p(n)}:${SCHEMA}:`,
    /** Prefix of the entities' sketches of distinct viewers (lua/includes/viewerSketch.lua). */
    viewersPrefix: (n: number) => `${prefix}${K.viewers}${p(n)}:${K.schema}`,
    /** Views of the partition not yet added up (lua/foldViews-3.lua). */
    viewBuffer: (n: number) => `${prefix}${K.viewBuffer}${p(n)}`,
    /** Entities whose views changed since they were last persisted to PostgreSQL. */
    viewsPending: (n: number) => `${prefix}${K.viewsPending}${p(n)}`,
    /** Entities whose persisted views a restore after a Redis loss added back (so a repeat adds nothing). */
    viewsRestored: (n: number) => `${prefix}vrest:${p(n)}`,
    /** The partition's hash tag: scripts name an entity's relation keys from it (includes/relationSet.lua). */
    partitionTag: (n: number) => p(n),
    /** Entities whose counters the flush pass in progress changed: pushed when it completes. */
    pushQueue: (n: number) => `${prefix}pushq:${p(n)}`,
    /** Shard channel of the partition's live post counts (SPUBLISH once per flush pass). */
    countsChannel: (n: number) => `${prefix}counts:${p(n)}`,
    /** Users of the user partition whose counters changed since they were last pushed. */
    userPushQueue: (n: number) => `${prefix}pushq:${u(n)}`,
    /** Shard channel of the user partition's live user counts. */
    userCountsChannel: (n: number) => `${prefix}counts:${u(n)}`,
    /** Prefix of the user partition's packed user counters (`<prefix><userId>`). */
    userCountersPrefix: (n: number) => `${prefix}ucnt:${u(n)}:${SCHEMA}:`,
  };

  return {
    prefix,
    partitions,
    partitionOf,
    /** The user partition of a user's own keys (counters, budgets, live counts). */
    userPartitionOf: (userId: number) => userPartition(userId, partitions),
    ...perPartition,

    // One relation's facts (user ids), stored as in lua/includes/relationSet.lua: array
    // blocks of sorted ids, and bitmap chunks of 32,768 ids where a bitmap is smaller.
    /** `<relation>:<type>:<id>`: the part of a relation's key names scripts take as an argument. */
    relationBase: (relation: string, entity: EntityRef) => `${relation}:${name(entity)}`,
    /** A bitmap chunk of the relation (chunk = user id / 32,768). */
    bitmapChunk: (relation: string, entity: EntityRef, chunk: number) =>
      `${prefix}${K.bitmap}${p(partitionOf(entity))}:${relation}:${name(entity)}:${chunk}`,
    /** Chunk numbers of the relation that are stored as bitmaps (a SET, as in schema v1). */
    chunkIndex: (relation: string, entity: EntityRef) => `${prefix}${K.chunkIndex}${p(partitionOf(entity))}:${relation}:${name(entity)}`,
    /** An array block of the relation: sorted 4-byte ids of the chunks from `start` on. */
    arrayBlock: (relation: string, entity: EntityRef, start: number) =>
      `${prefix}${K.arrayBlock}${p(partitionOf(entity))}:${relation}:${name(entity)}:${start}`,
    /** Start chunks of the relation's array blocks (a packed id list; absent while there is only block 0). */
    arrayIndex: (relation: string, entity: EntityRef) => `${prefix}${K.arrayIndex}${p(partitionOf(entity))}:${relation}:${name(entity)}`,
    /** Which reactions each user holds on the entity (lua/includes/reactionIndex.lua). */
    reactionIndex: (entity: EntityRef) => `${prefix}${K.reactionIndex}${p(partitionOf(entity))}:${name(entity)}`,
    /** Pending deltas of one entity (field = counter slot). */
    agg: (entity: EntityRef) => `${perPartition.aggPrefix(partitionOf(entity))}${name(entity)}`,
    /** The entity's sketch of distinct viewers (lua/includes/viewerSketch.lua). */
    viewers: (entity: EntityRef) => `${perPartition.viewersPrefix(partitionOf(entity))}${name(entity)}`,
    /** The entity's packed counters (src/counters/packedCounters.ts: 20 bytes and up). */
    counters: (entity: EntityRef) => `${perPartition.countersPrefix(partitionOf(entity))}${name(entity)}`,
    /** Held while one worker rebuilds the entity's counters. */
    rebuildLock: (entity: EntityRef) => `${prefix}rblock:${p(partitionOf(entity))}:${name(entity)}`,
    /** Rebuilds of the entity in the current rate-limit window. */
    rebuildRate: (entity: EntityRef) => `${prefix}rbrate:${p(partitionOf(entity))}:${name(entity)}`,
    /** First result of an idempotent mutation, in the entity's slot so the script can reach it. */
    idempotency: (entity: EntityRef, userId: number, key: string) =>
      `${prefix}${IDEMPOTENCY_KINDS[0]}${p(partitionOf(entity))}:${userId}:${keyDigest(key)}`,
    /** The user's counters (packed: followings, followers, posts, likesReceived, favsReceived). */
    userCounters: (userId: number) => `${perPartition.userCountersPrefix(userPartition(userId, partitions))}${userId}`,
    /** Version of the cached user counters (rows older than it are not written). */
    userCountersVersion: (userId: number) => `${prefix}ucntv:${u(userPartition(userId, partitions))}:${userId}`,
    /** The user's token bucket for one budget (src/limits/rateLimiter.ts). */
    rateLimit: (budget: string, userId: number) => `${prefix}rl:${u(userPartition(userId, partitions))}:${budget}:${userId}`,
    /** When each of a user's views last counted, for one window (lua/includes/viewWindow.lua), in the user's slot. */
    viewWindow: (userId: number) => `${prefix}vw:${u(userPartition(userId, partitions))}:${userId}`,
    /** The same for an anonymous client, by a digest of its address. */
    addressViewWindow: (digest: string) => `${prefix}vwa:${digest}`,
    /** An anonymous client's token bucket for one budget, by its address. */
    addressRateLimit: (budget: string, address: string) => `${prefix}rlip:${budget}:${address}`,
    /** The WebSocket connections a client (`u:<id>` or `a:<address>`) holds, every API process's (src/live/socketLeases.ts). */
    clientSockets: (client: string) => `${prefix}sockets:${client}`,
    /** Epoch ms: every change acknowledged before it is in the user counters. */
    usersAsOf: () => `${prefix}uasof`,
    /** Which request a user's idempotency key was first used for (in the user's slot). */
    idempotencyClaim: (userId: number, key: string) =>
      `${prefix}${IDEMPOTENCY_KINDS[1]}${u(userPartition(userId, partitions))}:${userId}:${keyDigest(key)}`,
    /** Every idempotency record of a user, of both kinds: a SCAN pattern, and the exact test of what it matches. */
    idempotencyRecordsOf: (userId: number) => ({
      match: `${prefix}idem*:${userId}:*`,
      isOne: (key: string) =>
        IDEMPOTENCY_KINDS.some((kind) => {
          if (!key.startsWith(prefix + kind)) return false;
          const [tag, user, digest, ...rest] = key.slice(prefix.length + kind.length).split(':');
          return tag?.startsWith('{') && user === String(userId) && digest !== undefined && rest.length === 0;
        }),
    }),
    /**
     * Every relation set's keys, to SCAN for (array blocks and chunk indexes: a set has one or
     * the other), and the relation and entity a key found is of (null for any other key).
     */
    relationSets: () => ({
      matches: [`${prefix}${K.arrayBlock}*`, `${prefix}${K.chunkIndex}*`],
      parse(key: string): { relation: string; entity: EntityRef } | null {
        const block = key.startsWith(prefix + K.arrayBlock);
        if (!block && !key.startsWith(prefix + K.chunkIndex)) return null;
        const [tag, relation, type, id, ...rest] = key.slice(prefix.length + (block ? K.arrayBlock : K.chunkIndex).length).split(':');
        if (!tag?.startsWith('{p') || !relation || !type || !/^\d+$/.test(id ?? '') || rest.length !== (block ? 1 : 0)) return null;
        return { relation, entity: { type, id: Number(id) } };
      },
    }),
    // The automatic persisted query store (src/graphql/persistedQueries.ts): one hash tag, so
    // its script reaches all three on a Cluster.
    /** Documents by Apollo's cache key for them ("apq:<sha256>"). */
    persistedQueryDocuments: () => `${prefix}apq:{apq}:docs`,
    /** The same keys scored by their last registration (epoch ms): expiry and eviction order. */
    persistedQueryRegistrations: () => `${prefix}apq:{apq}:lru`,
    /** Bytes of every stored document, for the store's byte bound. */
    persistedQueryBytes: () => `${prefix}apq:{apq}:bytes`,
    /** Deployment facts that must not change under running data (e.g. the partition count). */
    meta: () => `${prefix}meta:${SCHEMA}`,
    /** Held while one batch of a user's erasure runs: BullMQ may run a stalled job twice at once. */
    erasureBatchLock: (userId: number) => `${prefix}erasing:${userId}`,
    /** Held while one process restores the entity's facts from PostgreSQL. */
    restoreLock: (entity: EntityRef) => `${prefix}restoring:${p(partitionOf(entity))}:${name(entity)}`,
    /** Held by the one process that runs a recovery (the automatic one or `npm run recover`). */
    recoveryLock: () => `${prefix}recover:lock`,
    /** Held by the one process that builds the reaction index of reactions older than it. */
    reactionIndexLock: () => `${prefix}rxbuild:lock`,
    /** Progress of a recovery, so an interrupted one resumes. */
    recoveryProgress: () => `${prefix}recover:progress`,
    /** Written by a recovery of schema v1 before readiness markers (read only to upgrade). */
    legacyRecovering: () => `${prefix}recovering`,
    /** Channel announcing erasures as they start (every API process stops trusting the user). */
    erasuresChannel: () => `${prefix}erasures`,
    /** Channel announcing deleted posts (every API process forgets them in its caches). */
    deletionsChannel: () => `${prefix}deletions`,
    /** Channel announcing deleted entities a product owns, by Tally's id (every API process forgets them). */
    entityDeletionsChannel: () => `${prefix}entity-deletions`,
    /** The stream the owning service appends entity lifecycle messages to (EVENT_LOG=redis). */
    entityLifecycle: () => `${prefix}entity-lifecycle`,
    /** BullMQ's key prefix; the braces keep every queue's keys in one Cluster slot (BullMQ's scripts need a queue's keys together). */
    bullPrefix: () => `${prefix}{bull}`,
    /** Live consumers of a group (sorted set scored by heartbeat). */
    members: (group: string) => `${prefix}members:${group}`,
  };
}

export type Keys = ReturnType<typeof createKeys>;
