// One typed call per Lua script (lua/<name>-<keys>.lua): named arguments in, a typed result
// out, key names built here from src/redis/keys.ts in each script's header order. A bare
// negative reply becomes a ScriptError of the closed set in src/redis/scriptErrors.ts; no
// caller reads a raw reply.
import { USER_COUNTERS, type UserCounterValues } from '../domain/counters.js';
import { type EntityRef, type EntityType, entityName, POST } from '../domain/entities.js';
import { KINDS, TYPES } from '../domain/kinds.js';
import { type Relation, slotsSpec } from '../domain/relations.js';
import type { Keys } from './keys.js';
import type { RawScripts, ScriptedRedis } from './luaScripts.js';
import { unlessFailed } from './scriptErrors.js';

export type { ScriptedRedis } from './luaScripts.js';

/** '1': a yes in a reply of one character per answer (hasFacts). */
const YES = '1'.charCodeAt(0);

/** Every reaction with its slot: the kinds an entity's reaction index keeps (lua/includes/reactionIndex.lua). */
const REACTIONS_SPEC = slotsSpec(KINDS.reactions);

/** One entity's net changes per counter slot, as the aggregator applies them. */
export interface EntityDeltas {
  name: string;
  firstEvent: string;
  lastEvent: string;
  deltas: Map<number, number>;
}

export type BatchOutcome =
  | { outcome: 'applied' }
  /** Every event is at or below the position already applied. */
  | { outcome: 'skipped'; applied: string }
  /** Events up to `applied` were applied before (a redelivery): apply the rest. */
  | { outcome: 'partly applied'; applied: string }
  /** The entity was rebuilt mid-batch: its events up to `watermark` are counted already. */
  | { outcome: 'entity rebuilt'; entity: string; watermark: string };

export type RebuildRight = { status: 'acquired' } | { status: 'locked' | 'rate-limited'; retryInMs: number };

export interface CountersSnapshot {
  countersValid: boolean;
  /** Per counted relation (by name): the counter, the facts, deltas pending a fold, events not aggregated. */
  relations: { name: string; counter: number; facts: number; pending: number; inFlight: number }[];
}

/** A stream entry as Redis returns it. */
export type StreamEntry = [id: string, fields: string[]];

/** What a leased read took: entries, ids trimmed while pending (claim), and the claim's next cursor ('0-0': done; null for new entries). */
export interface LeasedRead {
  next: string | null;
  entries: StreamEntry[];
  deleted: string[];
}

const BATCH = { applied: 1, skipped: 0, partlyApplied: -1, entityRebuilt: -3 } as const;
const REBUILD = { acquired: 1, locked: 0, rateLimited: -1 } as const;

export function createScripts(redis: ScriptedRedis, keys: Keys) {
  const raw = redis as unknown as RawScripts;
  const call = async <T>(script: string, ...args: (string | number | Buffer)[]): Promise<T> =>
    unlessFailed<T>(script, (await raw[script]!(...args)) as T | number);
  /** The same, with every string of the reply as a Buffer (for binary values). */
  const callBuffer = async <T>(script: string, ...args: (string | number | Buffer)[]): Promise<T> =>
    unlessFailed<T>(script, (await raw[`${script}Buffer`]!(...args)) as T | number);
  const tagOf = (entity: EntityRef) => keys.partitionTag(keys.partitionOf(entity));

  return {
    /** Sets a user's relation to an entity to `active`, appending its event if that changed it. */
    async setRelation(a: {
      entity: EntityRef;
      relation: Relation;
      userId: number;
      /** Whose counters the change also moves (the post's author, the followed user). */
      authorId: number;
      active: boolean;
      /** The request's idempotency key ('' for none) and what it stands for. */
      idempotencyKey: string;
      fingerprint: string;
      idempotencyTtlS: number;
      /** Epoch ms past which Redis refuses the call (TooLate); 0 for never. */
      notAfterMs?: number;
      /** Counted kinds that setting this one removes the user from, in the same step. */
      exclusive?: readonly Relation[];
    }): Promise<{ changed: boolean; replayed: boolean; eventId: string }> {
      const partition = keys.partitionOf(a.entity);
      const [status, changed, eventId] = await call<[number, number, string]>(
        'setRelation',
        keys.chunkIndex(a.relation.name, a.entity),
        keys.arrayIndex(a.relation.name, a.entity),
        keys.outbox(partition),
        keys.idempotency(a.entity, a.userId, a.idempotencyKey),
        keys.ready(partition),
        keys.restored(partition),
        keys.partitionTag(partition),
        a.active ? 1 : 0,
        keys.prefix,
        a.fingerprint,
        a.idempotencyTtlS,
        a.entity.type,
        a.entity.id,
        a.relation.name,
        a.relation.slot ?? '',
        a.userId,
        a.authorId,
        a.notAfterMs ?? 0,
        slotsSpec(a.exclusive ?? []),
        REACTIONS_SPEC,
      );
      return { changed: changed === 1, replayed: status === 2, eventId };
    },

    /**
     * Whether `userId` has each relation on each entity (one call: the entities must share a
     * slot on a Cluster), and whether Redis holds each entity's facts at all: read by the
     * entity's position in `ids` and the relation's in `relations`.
     */
    async hasFacts(a: { userId: number; type: EntityType; relations: readonly Relation[]; ids: readonly number[] }) {
      const args: (string | number)[] = [
        keys.chunkIndex(a.relations[0]!.name, { type: a.type, id: a.ids[0]! }),
        keys.prefix,
        a.userId,
        a.type,
        a.relations.map((r) => r.name).join(','),
        slotsSpec(a.relations.filter((r) => r.reaction !== null)),
      ];
      for (const id of a.ids) args.push(tagOf({ type: a.type, id }), id);
      const reply = await call<string>('hasFacts', ...args);
      const stride = a.relations.length + 1; // per entity: whether Redis holds it, then each relation
      return {
        ready: (entity: number) => reply.charCodeAt(entity * stride) === YES,
        has: (entity: number, relation: number) => reply.charCodeAt(entity * stride + 1 + relation) === YES,
      };
    },

    /** Builds the entity's reaction index from its sets unless it has one; true when it built it. */
    indexReactions: async (entity: EntityRef) =>
      (await call<number>('indexReactions', keys.reactionIndex(entity), keys.prefix, tagOf(entity), entityName(entity), REACTIONS_SPEC)) ===
      1,

    /** Sets one fact without an event (restoring what PostgreSQL holds); true when it changed. */
    async writeFact(a: { relation: string; entity: EntityRef; userId: number; active: boolean }): Promise<boolean> {
      const reply = await call<number>(
        'writeFact',
        keys.chunkIndex(a.relation, a.entity),
        keys.prefix,
        tagOf(a.entity),
        a.relation,
        entityName(a.entity),
        a.userId,
        a.active ? 1 : 0,
        REACTIONS_SPEC,
      );
      return reply === 1;
    },

    /** Applies a partition's batch, summed per entity, exactly once (its position is recorded with it). */
    async applyCounterBatch(a: {
      partition: number;
      source: string;
      firstPosition: string;
      lastPosition: string;
      newestEvent: string;
      sums: readonly EntityDeltas[];
    }): Promise<BatchOutcome> {
      const p = a.partition;
      const args: (string | number)[] = [
        keys.aggState(p),
        keys.dirty(p),
        keys.rebuilt(p),
        a.source,
        a.firstPosition,
        a.lastPosition,
        a.newestEvent,
        keys.aggPrefix(p),
        a.sums.length,
      ];
      for (const sum of a.sums) {
        const deltas = [...sum.deltas].filter(([, delta]) => delta !== 0);
        args.push(sum.name, sum.firstEvent, sum.lastEvent, deltas.length, ...deltas.flat());
      }
      const [status, x, y] = await call<[number, string?, string?]>('applyCounterBatch', ...args);
      switch (status) {
        case BATCH.applied:
          return { outcome: 'applied' };
        case BATCH.skipped:
          return { outcome: 'skipped', applied: x! };
        case BATCH.partlyApplied:
          return { outcome: 'partly applied', applied: x! };
        case BATCH.entityRebuilt:
          return { outcome: 'entity rebuilt', entity: x!, watermark: y! };
        default:
          throw new Error(`applyCounterBatch: unknown outcome ${status}`);
      }
    },

    /**
     * Folds up to `limit` dirty entities of a partition into their packed counters; the call that
     * completes a pass pushes the entities it changed (`pushed`) on the partition's channel.
     */
    async foldDirtyCounters(a: { partition: number; limit: number; asOfAtMost: number }) {
      const p = a.partition;
      const [folded, remaining, rebuilt, pushed] = await call<[number, number, number, number]>(
        'foldDirtyCounters',
        keys.dirty(p),
        keys.folding(p),
        keys.flushState(p),
        keys.flushed(p),
        keys.aggState(p),
        keys.outbox(p),
        keys.rebuilt(p),
        keys.pushQueue(p),
        a.limit,
        keys.aggPrefix(p),
        keys.countersPrefix(p),
        keys.prefix,
        keys.partitionTag(p),
        TYPES.slotsSpec(POST),
        keys.countsChannel(p),
        a.asOfAtMost,
      );
      return { folded, remaining, rebuilt, pushed };
    },

    /** An entity's counters (by slot) straight from its facts, and Redis's time. */
    async countFromFacts(entity: EntityRef) {
      const [at, ...counters] = await call<number[]>(
        'countFromFacts',
        keys.chunkIndex(TYPES.countedOn(entity.type)[0]!.name, entity),
        keys.prefix,
        tagOf(entity),
        entityName(entity),
        TYPES.slotsSpec(entity.type),
      );
      return { counters, at: new Date(at!) };
    },

    /** Recounts an entity from its facts and records the watermark, in one atomic step. */
    async rebuildCounters(entity: EntityRef): Promise<{ counters: number[]; watermark: string | null }> {
      const p = keys.partitionOf(entity);
      const reply = await call<(number | string)[]>(
        'rebuildCounters',
        keys.counters(entity),
        keys.agg(entity),
        keys.aggState(p),
        keys.outbox(p),
        keys.rebuilt(p),
        entityName(entity),
        keys.prefix,
        keys.partitionTag(p),
        TYPES.slotsSpec(entity.type),
      );
      return { counters: reply.slice(1) as number[], watermark: (reply[0] as string) || null };
    },

    /** Takes the entity's rebuild lock and one slot of its rate limit. */
    async acquireRebuild(a: {
      entity: EntityRef;
      holder: string;
      lockMs: number;
      windowMs: number;
      allowed: number;
    }): Promise<RebuildRight> {
      const [status, ttl = 0] = await call<[number, number?]>(
        'acquireRebuild',
        keys.rebuildLock(a.entity),
        keys.rebuildRate(a.entity),
        a.holder,
        a.lockMs,
        a.windowMs,
        a.allowed,
      );
      if (status === REBUILD.acquired) return { status: 'acquired' };
      return { status: status === REBUILD.locked ? 'locked' : 'rate-limited', retryInMs: Math.max(ttl, 1) };
    },

    /** Reconciliation's atomic snapshot of a post; null when it cannot be checked now. */
    async inspectCounters(a: { post: EntityRef; scanLimit: number }): Promise<CountersSnapshot | null> {
      const p = keys.partitionOf(a.post);
      const reply = await call<number[]>(
        'inspectCounters',
        keys.counters(a.post),
        keys.agg(a.post),
        keys.aggState(p),
        keys.outbox(p),
        keys.rebuilt(p),
        a.post.type,
        a.post.id,
        keys.prefix,
        keys.partitionTag(p),
        TYPES.slotsSpec(a.post.type),
        a.scanLimit,
      );
      if (reply[0] !== 1) return null;
      return {
        countersValid: reply[1] === 1,
        relations: TYPES.countedOn(a.post.type).map(({ name }, i) => {
          const [counter, facts, pending, inFlight] = reply.slice(2 + i * 4, 6 + i * 4) as [number, number, number, number];
          return { name, counter, facts, pending, inFlight };
        }),
      };
    },

    /** Switches up to `limit` replayed entities of a partition to their recomputed counters. */
    async switchReplayedCounters(a: { partition: number; through: string; limit: number }) {
      const p = a.partition;
      const [switched, left] = await call<[number, number]>(
        'switchReplayedCounters',
        keys.replayedEntities(p),
        keys.aggState(p),
        keys.outbox(p),
        keys.rebuilt(p),
        a.through,
        a.limit,
        keys.replayedPrefix(p),
        keys.countersPrefix(p),
        keys.aggPrefix(p),
      );
      return { switched, left };
    },

    /** Epoch ms before which every change of the partition is in PostgreSQL. */
    persistedAsOf: (partition: number) => call<number>('persistedAsOf', keys.persisted(partition), keys.outbox(partition)),

    /** Caches a user's counters unless a newer version is cached (`repair` also overwrites the same one). */
    async setUserCounters(a: {
      userId: number;
      version: bigint;
      counters: UserCounterValues;
      repair: boolean;
      /** The row comes from a change (pushed even into an empty cache), not from a read. */
      changed?: boolean;
    }): Promise<boolean> {
      const reply = await call<number>(
        'setUserCounters',
        keys.userCounters(a.userId),
        keys.userCountersVersion(a.userId),
        keys.userPushQueue(keys.userPartitionOf(a.userId)),
        String(a.version),
        ...USER_COUNTERS.map((field) => a.counters[field]),
        a.repair ? '1' : '0',
        a.userId,
        a.changed ? '1' : '0',
      );
      return reply === 1;
    },

    /** Pushes a user partition's changed users on its live counts channel; how many. */
    publishUserCounts: (a: { partition: number; asOf: number }) =>
      call<number>(
        'publishUserCounts',
        keys.userPushQueue(a.partition),
        keys.userCountersPrefix(a.partition),
        keys.userCountsChannel(a.partition),
        a.asOf,
      ),

    /** Moves a recorded position forward (never back); true when it moved. */
    raisePosition: async (key: string, position: string) => (await call<number>('raisePosition', key, position)) === 1,

    /** Takes up to `wanted` tokens: how many were granted, then tokens left or ms until the next. */
    async takeTokens(a: { bucket: string; capacity: number; windowMs: number; wanted: number; allOrNothing?: boolean }) {
      const mode = a.allOrNothing ? 'all' : 'some';
      const [granted, value] = await call<[number, number]>('takeTokens', a.bucket, a.capacity, a.windowMs, a.wanted, mode);
      return { granted, value };
    },

    /**
     * On a single Redis, in one step: the views `budget` when given (all of `wanted` or none:
     * `refusedForMs` is then how long until there are, and nothing is recorded), then which of
     * `entities` count a view by the viewer whose window is `window` now (at most once per
     * `windowMs`), those added with the viewer's `digest` ('' for views counted in `total` only).
     */
    async recordViews(a: {
      window: string;
      windowMs: number;
      digest: string;
      entities: readonly EntityRef[];
      budget?: { bucket: string; capacity: number; windowMs: number; wanted: number };
    }): Promise<{ refusedForMs: number; counted: boolean[] }> {
      const { budget } = a;
      const [refusedForMs, ...counted] = await call<number[]>(
        'recordViews',
        a.window,
        keys.viewBuffer(a.entities.length > 0 ? keys.partitionOf(a.entities[0]!) : 0),
        budget?.bucket ?? a.window,
        a.windowMs,
        keys.prefix,
        a.digest,
        budget?.capacity ?? 0,
        budget?.windowMs ?? 0,
        budget?.wanted ?? 0,
        ...a.entities.map(entityName),
        ...a.entities.map(tagOf),
      );
      return { refusedForMs: refusedForMs!, counted: counted.map((c) => c === 1) };
    },

    /** On a Cluster, the first step: which of `entities` count a view by the viewer whose window is `window` now (at most once per `windowMs`). */
    claimViews: async (a: { window: string; windowMs: number; entities: readonly EntityRef[] }) =>
      (await call<number[]>('claimViews', a.window, a.windowMs, ...a.entities.map(entityName))).map((counted) => counted === 1),

    /**
     * On a Cluster, the second step: adds one view to each entity (of one partition), with its viewer's digest
     * ('' for a view counted in `total` only); how many it added.
     */
    addViews: (views: readonly { entity: EntityRef; digest: string }[]) =>
      call<number>(
        'addViews',
        keys.viewBuffer(keys.partitionOf(views[0]!.entity)),
        keys.prefix,
        ...views.flatMap((view) => [tagOf(view.entity), entityName(view.entity), view.digest]),
      ),

    /** Adds up to `limit` buffered views to their entities' counters and sketches; how many it took, and Redis's time then. */
    foldViews: async (a: { partition: number; exactUpTo: number; limit: number }) => {
      const [taken, at] = await call<[number, number]>(
        'foldViews',
        keys.viewBuffer(a.partition),
        keys.dirty(a.partition),
        keys.viewsPending(a.partition),
        keys.aggPrefix(a.partition),
        keys.viewersPrefix(a.partition),
        a.exactUpTo,
        a.limit,
      );
      return { taken, at };
    },

    /**
     * Takes up to `limit` of the partition's entities whose views changed since they were last
     * persisted, with their views as they stand (src/counters/viewSnapshots.ts).
     */
    async takeViewSnapshots(a: { partition: number; limit: number }) {
      const p = a.partition;
      const [at, ...flat] = await callBuffer<[number, ...(Buffer | number)[]]>(
        'takeViewSnapshots',
        keys.viewsPending(p),
        keys.dirty(p),
        keys.prefix,
        keys.partitionTag(p),
        keys.countersPrefix(p),
        keys.aggPrefix(p),
        keys.viewersPrefix(p),
        a.limit,
      );
      const taken: { entity: string; total: number; unique: number; sketch: Buffer }[] = [];
      for (let i = 0; i < flat.length; i += 4) {
        taken.push({ entity: String(flat[i]), total: Number(flat[i + 1]), unique: Number(flat[i + 2]), sketch: flat[i + 3] as Buffer });
      }
      return { at, taken };
    },

    /** Adds an entity's persisted views back after a Redis loss; false when that was done already. */
    async restoreViews(a: { entity: EntityRef; exactUpTo: number; total: number; sketch: Buffer }): Promise<boolean> {
      const p = keys.partitionOf(a.entity);
      const restored = await call<number>(
        'restoreViews',
        keys.dirty(p),
        keys.viewsRestored(p),
        keys.viewsPending(p),
        entityName(a.entity),
        keys.countersPrefix(p),
        keys.aggPrefix(p),
        keys.viewersPrefix(p),
        a.exactUpTo,
        a.total,
        a.sketch,
      );
      return restored === 1;
    },

    /** Stores a persisted query in the bounded store; how many documents it evicted. */
    storePersistedQuery: (a: { key: string; document: string; ttlMs: number; maxDocuments: number; maxBytes: number }) =>
      call<number>(
        'storePersistedQuery',
        keys.persistedQueryDocuments(),
        keys.persistedQueryRegistrations(),
        keys.persistedQueryBytes(),
        a.key,
        a.document,
        a.ttlMs,
        a.maxDocuments,
        a.maxBytes,
      ),

    /**
     * Takes a place for `socketIds[0]` among the client's sockets when `max` > 0 (false: it
     * holds `max` already), or renews every id in `socketIds` when `max` is 0.
     */
    leaseSockets: async (a: { client: string; leaseMs: number; max: number; socketIds: readonly string[] }) =>
      (await call<number>('leaseSockets', keys.clientSockets(a.client), a.leaseMs, a.max, ...a.socketIds)) === 1,

    /**
     * Reads a partition's stream for `group` if `member` holds the partition's lease for it:
     * its pending entries from `cursor` ('claim') or entries never delivered ('new'). Null
     * when another member holds the lease (nothing was read).
     */
    readLeasedStream: async (a: {
      partition: number;
      group: string;
      member: string;
      read: { claim: string } | 'new';
      count: number;
    }): Promise<LeasedRead | null> => {
      const mode = a.read === 'new' ? 'new' : 'claim';
      const cursor = a.read === 'new' ? '' : a.read.claim;
      const reply = await call<0 | [1, string, StreamEntry[], string[]] | [2, StreamEntry[]]>(
        'readLeasedStream',
        keys.lease(a.partition, a.group),
        keys.outbox(a.partition),
        a.member,
        a.group,
        mode,
        a.count,
        cursor,
      );
      if (reply === 0) return null;
      if (reply[0] === 1) return { next: reply[1], entries: reply[2], deleted: reply[3] };
      return { next: null, entries: reply[1], deleted: [] };
    },

    /** Extends a lease the caller holds; false when it does not. */
    renewLease: async (key: string, holder: string, ms: number) => (await call<number>('renewLease', key, holder, ms)) === 1,

    /** Gives a lease back if the caller holds it. */
    releaseLease: async (key: string, holder: string) => (await call<number>('releaseLease', key, holder)) === 1,
  };
}

export type Scripts = ReturnType<typeof createScripts>;
