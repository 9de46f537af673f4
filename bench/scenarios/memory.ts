// Scenario "memory": what one relation (a user liking a post) and one counted entity cost in
// Redis, by MEMORY USAGE <key> SAMPLES 0 (every element counted) summed over the keys. No
// servers: Tally's facts go through its real write path (relationStore.setFact, i.e. the
// setRelation script); the layouts it is compared with are built directly, one after
// another. Key names are a deployment's (no REDIS_KEY_PREFIX), so the run needs an empty Redis
// database of its own and empties it again before returning. Fixed seeds: every run measures
// the same data.

import { Redis } from 'ioredis';
import { random, shuffled } from '../../prisma/random.js';
import { encodeSds } from '../../src/counters/sds.js';
import { SDS_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { type ScriptedRedis, withScripts } from '../../src/redis/luaScripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';

/** One Redis server with Tally's scripts defined (SCAN walks one server). */
type ScriptedServer = Redis & ScriptedRedis;

/** Tally's default; it only sets the width of the `{pN}` tags in key names. */
const PARTITIONS = 16;
/** The pre-adaptive layout's chunk (schema v1, docs/design.md "Relation storage"). */
const CHUNK_IDS = 32_768;
const LIKE = POST_RELATIONS.LIKE;
/** Entities written, measured and deleted together (bounds the memory the sparse plain bitmaps take). */
const ENTITY_BATCH = 20;
/** setFact calls in flight at once (auto-pipelined). */
const WRITE_BATCH = 2000;
export const COUNTED_ENTITIES = 100_000;

export type RelationLayout = 'tally' | 'plainBitmap' | 'set' | 'hash';
export const RELATION_LAYOUTS: Record<RelationLayout, string> = {
  tally: 'Tally, as its setRelation script stores a relation (every bm* and ra* key)',
  plainBitmap: 'plain bitmap (SETBIT bm:<entity>:<chunk> + SET of chunks)',
  set: 'SET of user ids (SADD)',
  hash: 'HASH user id -> 1 (HSET)',
};

export interface LayoutMemory {
  bytes: number;
  perRelation: number;
  /** Keys by kind (Tally: bm/bmi/ra/rai) or by encoding (OBJECT ENCODING). */
  keys: Record<string, number>;
}

export interface RelationMemory {
  dataSet: string;
  description: string;
  entities: number;
  relations: number;
  layouts: Record<RelationLayout, LayoutMemory>;
}

export type EntityLayout = 'sds' | 'hash5' | 'bucketHash' | 'slotString' | 'slotStringPresized';
export const ENTITY_LAYOUTS: Record<EntityLayout, string> = {
  sds: "SDS string per entity (Tally's cnt:, 20 bytes)",
  hash5: 'HASH per entity, 5 fields "0".."4"',
  bucketHash: 'bucketed HASH: 100 entities per key, field id -> 20-byte SDS',
  slotString: 'fixed-slot string: 1,024 entities per key, SETRANGE (id % 1024) * 20',
  slotStringPresized: 'the same, each key first SET to 20,480 zero bytes (NX)',
};
/** Entities per fixed-slot string, and the bytes of a full one. */
const SLOTS = 1024;
const SLOT_STRING_BYTES = SLOTS * 20;

export interface EntityMemory {
  layout: EntityLayout;
  description: string;
  entities: number;
  bytes: number;
  perEntity: number;
  keys: Record<string, number>;
}

export interface MemoryResults {
  method: string;
  /** The Redis database the run used (empty before, emptied after). */
  db: number;
  relationLayouts: Record<RelationLayout, string>;
  redis: Record<string, string | null>;
  relations: RelationMemory[];
  entities: EntityMemory[];
}

// ---------------------------------------------------------------------------------------
// Data sets: post id -> the user ids that like it, in the order the likes arrive.

interface DataSet {
  name: string;
  description: string;
  likers: Map<number, number[]>;
}

/** `count` distinct ids from `draw`, in drawing order. */
function distinct(count: number, draw: () => number): number[] {
  const ids = new Set<number>();
  while (ids.size < count) ids.add(draw());
  return [...ids];
}

function denseSet(n: number): DataSet {
  return {
    name: `dense ${n.toLocaleString('en-US')}`,
    description: `users 1..${n} (one 32,768-id chunk) like one post, in random order`,
    likers: new Map([
      [
        1,
        shuffled(
          Array.from({ length: n }, (_, i) => i + 1),
          random(n),
        ),
      ],
    ]),
  };
}

function sparseSet(): DataSet {
  const rand = random(100_000_000);
  const likers = new Map<number, number[]>();
  for (let post = 1; post <= 1000; post++)
    likers.set(
      post,
      distinct(100, () => 1 + Math.floor(rand() * 1e8)),
    );
  return { name: 'sparse', description: '1,000 posts x 100 likers drawn uniformly among user ids 1..10^8', likers };
}

/**
 * 10,000 posts; the post of popularity rank r has max(1, round(30,000 * r^-1.1)) likes (the top
 * ones tens of thousands, the median 3). Likers among 10^7 users with skew: id = 1 + floor(10^7 u²),
 * density ∝ 1/√id, so early users (low ids) like far more than recent ones.
 */
function longTailSet(): DataSet {
  const rand = random(10_000_000);
  const posts = 10_000;
  const ranks = shuffled(
    Array.from({ length: posts }, (_, i) => i + 1),
    rand,
  );
  const likers = new Map<number, number[]>();
  ranks.forEach((rank, i) => {
    const count = Math.max(1, Math.round(30_000 * rank ** -1.1));
    likers.set(
      i + 1,
      distinct(count, () => 1 + Math.floor(1e7 * rand() ** 2)),
    );
  });
  return {
    name: 'long tail',
    description: '10,000 posts, likes by rank r = max(1, round(30,000 r^-1.1)); likers among 10^7 ids, density ∝ 1/√id',
    likers,
  };
}

// ---------------------------------------------------------------------------------------
// Measuring.

const post = (id: number) => ({ type: POST, id });

async function scanKeys(redis: Redis, pattern: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

/** Runs `command` for every key, 1,000 per pipeline, and returns the replies in key order. */
async function perKey<T>(redis: Redis, keys: readonly string[], command: (key: string) => (string | number)[]): Promise<T[]> {
  const replies: T[] = [];
  for (let i = 0; i < keys.length; i += 1000) {
    const pipeline = redis.pipeline();
    for (const key of keys.slice(i, i + 1000)) {
      const [name, ...args] = command(key);
      pipeline.call(name as string, ...args);
    }
    for (const [error, reply] of (await pipeline.exec())!) {
      if (error) throw error;
      replies.push(reply as T);
    }
  }
  return replies;
}

const memoryOf = async (redis: Redis, keys: readonly string[]) =>
  (await perKey<number | null>(redis, keys, (key) => ['MEMORY', 'USAGE', key, 'SAMPLES', 0])).reduce<number>((sum, b) => sum + (b ?? 0), 0);

async function encodingsOf(redis: Redis, keys: readonly string[], into: Record<string, number>) {
  for (const encoding of await perKey<string>(redis, keys, (key) => ['OBJECT', 'ENCODING', key])) {
    into[encoding] = (into[encoding] ?? 0) + 1;
  }
}

async function unlinkAll(redis: Redis, keys: readonly string[]) {
  for (let i = 0; i < keys.length; i += 1000) await redis.unlink(...keys.slice(i, i + 1000));
}

const relationsIn = (set: DataSet) => [...set.likers.values()].reduce((n, ids) => n + ids.length, 0);

/** Tally's facts, written the way a like writes them. */
async function measureTally(redis: ScriptedServer, set: DataSet): Promise<LayoutMemory> {
  const keys = createKeys('', PARTITIONS);
  const store = createRelationStore(redis, keys);
  await createReadiness(redis, keys).markAllReady(); // a whole deployment, as after its first start
  const outboxes = Array.from({ length: PARTITIONS }, (_, p) => keys.outbox(p));
  const writes = [...set.likers].flatMap(([id, users]) => users.map((userId) => ({ id, userId })));
  let changed = 0;
  for (let i = 0; i < writes.length; i += WRITE_BATCH) {
    const results = await Promise.all(
      writes
        .slice(i, i + WRITE_BATCH)
        .map(({ id, userId }) => store.setFact({ userId, entity: post(id), relation: LIKE, authorId: 1, active: true })),
    );
    changed += results.filter((r) => r.changed).length;
    // The events are not facts and nothing consumes them here: drop them as we go.
    await redis.del(...outboxes);
  }
  // Every like is new: anything else means the facts went somewhere this scan will not look.
  if (changed !== writes.length) throw new Error(`memory/${set.name}: Tally reported ${changed} changes for ${writes.length} new likes`);

  const factKeys = [...(await scanKeys(redis, 'bm*')), ...(await scanKeys(redis, 'ra*'))];
  if (factKeys.length === 0) throw new Error(`memory/${set.name}: no Tally fact keys`);
  const kinds: Record<string, number> = {};
  for (const key of factKeys) {
    const kind = /^(bmi|bm|rai|ra):/.exec(key)?.[1] ?? 'other';
    kinds[kind] = (kinds[kind] ?? 0) + 1;
  }
  const bytes = await memoryOf(redis, factKeys);
  await unlinkAll(redis, await scanKeys(redis, '*'));
  return { bytes, perRelation: bytes / writes.length, keys: kinds };
}

/** A comparison layout: `write` queues one entity's commands and returns the keys it wrote. */
type Build = (pipeline: ReturnType<Redis['pipeline']>, id: number, userIds: readonly number[]) => string[];

async function measureBuilt(redis: Redis, set: DataSet, write: Build): Promise<LayoutMemory> {
  const entries = [...set.likers];
  const encodings: Record<string, number> = {};
  let bytes = 0;
  for (let i = 0; i < entries.length; i += ENTITY_BATCH) {
    const pipeline = redis.pipeline();
    const written = new Set<string>();
    for (const [id, userIds] of entries.slice(i, i + ENTITY_BATCH)) for (const key of write(pipeline, id, userIds)) written.add(key);
    for (const [error] of (await pipeline.exec())!) if (error) throw error;
    const keys = [...written];
    bytes += await memoryOf(redis, keys);
    await encodingsOf(redis, keys, encodings);
    await unlinkAll(redis, keys);
  }
  return { bytes, perRelation: bytes / relationsIn(set), keys: encodings };
}

/** Key of a whole relation in one key (the SET and HASH layouts), shaped like Tally's names. */
const relationKey = (keys: Keys, id: number) =>
  `${keys.prefix}rel:${keys.partitionTag(keys.partitionOf(post(id)))}:${keys.relationBase(LIKE.name, post(id))}`;

const inGroups = <T>(items: readonly T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

function comparisonLayouts(): Record<Exclude<RelationLayout, 'tally'>, Build> {
  const plain = createKeys('', PARTITIONS);
  const sets = plain;
  const hashes = plain;
  return {
    plainBitmap: (pipeline, id, userIds) => {
      const written = [plain.chunkIndex(LIKE.name, post(id))];
      for (const userId of userIds) {
        const chunk = Math.floor(userId / CHUNK_IDS);
        const key = plain.bitmapChunk(LIKE.name, post(id), chunk);
        pipeline.setbit(key, userId % CHUNK_IDS, 1);
        pipeline.sadd(written[0]!, chunk);
        written.push(key);
      }
      return written;
    },
    set: (pipeline, id, userIds) => {
      const key = relationKey(sets, id);
      for (const group of inGroups(userIds, 1000)) pipeline.sadd(key, ...group);
      return [key];
    },
    hash: (pipeline, id, userIds) => {
      const key = relationKey(hashes, id);
      for (const group of inGroups(userIds, 1000)) pipeline.hset(key, ...group.flatMap((u) => [u, 1]));
      return [key];
    },
  };
}

async function measureRelations(redis: ScriptedServer, set: DataSet): Promise<RelationMemory> {
  const layouts = comparisonLayouts();
  return {
    dataSet: set.name,
    description: set.description,
    entities: set.likers.size,
    relations: relationsIn(set),
    layouts: {
      tally: await measureTally(redis, set),
      plainBitmap: await measureBuilt(redis, set, layouts.plainBitmap),
      set: await measureBuilt(redis, set, layouts.set),
      hash: await measureBuilt(redis, set, layouts.hash),
    },
  };
}

/** One entity's five counters: plausible magnitudes (reads >> likes >> favs...). */
function countersOf(rand: () => number): number[] {
  const scale = [20_000, 2_000, 300, 100, 50];
  return Array.from({ length: SDS_SLOTS }, (_, i) => Math.floor(scale[i]! * rand() ** 3));
}

async function measureEntities(redis: Redis): Promise<EntityMemory[]> {
  const rand = random(SDS_SLOTS);
  const ids = Array.from({ length: COUNTED_ENTITIES }, (_, i) => i + 1);
  const counters = ids.map(() => countersOf(rand));
  // Each layout is written, measured and deleted before the next: they may share names.
  const sdsKeys = createKeys('', PARTITIONS);
  const hashKeys = sdsKeys;
  const bucketPrefix = '';
  const slotPrefix = '';
  const presizedPrefix = '';
  const presized = new Set<string>();

  const layouts: Record<EntityLayout, Build> = {
    sds: (pipeline, id) => {
      const key = sdsKeys.counters(post(id));
      pipeline.set(key, encodeSds(counters[id - 1]!));
      return [key];
    },
    hash5: (pipeline, id) => {
      const key = hashKeys.counters(post(id));
      pipeline.hset(key, ...counters[id - 1]!.flatMap((v, i) => [String(i), v]));
      return [key];
    },
    bucketHash: (pipeline, id) => {
      const key = `${bucketPrefix}cnt:post:${Math.floor(id / 100)}`;
      pipeline.hset(key, id, encodeSds(counters[id - 1]!));
      return [key];
    },
    slotString: (pipeline, id) => {
      const key = `${slotPrefix}cnt:post:${Math.floor(id / SLOTS)}`;
      pipeline.setrange(key, (id % SLOTS) * 20, encodeSds(counters[id - 1]!));
      return [key];
    },
    // SETRANGE grows a string the way every append does (to twice the length asked, below
    // 1 MB); a string created at its full length by SET is allocated at that length.
    slotStringPresized: (pipeline, id) => {
      const key = `${presizedPrefix}cnt:post:${Math.floor(id / SLOTS)}`;
      if (!presized.has(key)) pipeline.set(key, Buffer.alloc(SLOT_STRING_BYTES), 'NX');
      presized.add(key);
      pipeline.setrange(key, (id % SLOTS) * 20, encodeSds(counters[id - 1]!));
      return [key];
    },
  };

  const results: EntityMemory[] = [];
  for (const [layout, write] of Object.entries(layouts) as [EntityLayout, Build][]) {
    const written = new Set<string>();
    for (const group of inGroups(ids, 1000)) {
      const pipeline = redis.pipeline();
      for (const id of group) for (const key of write(pipeline, id, [])) written.add(key);
      for (const [error] of (await pipeline.exec())!) if (error) throw error;
    }
    const keys = [...written];
    const bytes = await memoryOf(redis, keys);
    const encodings: Record<string, number> = {};
    await encodingsOf(redis, keys, encodings);
    await unlinkAll(redis, keys);
    results.push({
      layout,
      description: ENTITY_LAYOUTS[layout],
      entities: ids.length,
      bytes,
      perEntity: bytes / ids.length,
      keys: encodings,
    });
  }
  return results;
}

async function redisSettings(redis: Redis): Promise<Record<string, string | null>> {
  const config = async (name: string) => ((await redis.config('GET', name)) as string[])[1] ?? null;
  return {
    version: /redis_version:(\S+)/.exec(await redis.info('server'))?.[1] ?? null,
    'hash-max-listpack-entries': await config('hash-max-listpack-entries'),
    'hash-max-listpack-value': await config('hash-max-listpack-value'),
    'set-max-intset-entries': await config('set-max-intset-entries'),
  };
}

/** The Redis database the scenario uses: BENCH_MEMORY_DB, default 15. */
export function memoryDb(): number {
  const db = Number(process.env.BENCH_MEMORY_DB ?? 15);
  if (!Number.isInteger(db) || db < 0) throw new Error(`BENCH_MEMORY_DB must be a database number, got ${process.env.BENCH_MEMORY_DB}`);
  return db;
}

/** Deletes every key in `db` (after an interrupted run: the scenario only runs on an empty one). */
export async function emptyMemoryDb(redisUrl: string, db: number): Promise<void> {
  const redis = new Redis(redisUrl, { db });
  try {
    await unlinkAll(redis, await scanKeys(redis, '*'));
  } finally {
    redis.disconnect();
  }
}

/**
 * Measures every layout on every data set in Redis database `db`, which must be empty (the
 * keys are named as in a deployment, without a prefix) and is emptied again at the end;
 * logs progress with `log`.
 */
export async function runMemoryScenario(opts: { redisUrl: string; db: number; log?: (line: string) => void }): Promise<MemoryResults> {
  const log = opts.log ?? (() => {});
  const redis = withScripts(new Redis(opts.redisUrl, { db: opts.db, enableAutoPipelining: true }));
  const held = await redis.dbsize();
  if (held > 0) {
    redis.disconnect();
    throw new Error(`memory: Redis database ${opts.db} holds ${held} keys; the scenario needs an empty one (BENCH_MEMORY_DB)`);
  }
  try {
    const relations: RelationMemory[] = [];
    for (const make of [() => denseSet(100), () => denseSet(5_000), () => denseSet(32_000), sparseSet, longTailSet]) {
      const set = make();
      const started = performance.now();
      const row = await measureRelations(redis, set);
      relations.push(row);
      const per = (l: RelationLayout) => row.layouts[l].perRelation.toFixed(1);
      log(
        `  ${set.name}: ${row.relations} relations on ${row.entities} posts; B/relation Tally ${per('tally')}, ` +
          `plain bitmap ${per('plainBitmap')}, SET ${per('set')}, HASH ${per('hash')} (${((performance.now() - started) / 1000).toFixed(1)} s)`,
      );
    }
    const entities = await measureEntities(redis);
    log(
      `  per counted entity (${COUNTED_ENTITIES.toLocaleString('en-US')}): ${entities.map((e) => `${e.layout} ${e.perEntity.toFixed(1)} B`).join(', ')}`,
    );
    return {
      method: 'docs/performance.md#the-bench',
      db: opts.db,
      relationLayouts: RELATION_LAYOUTS,
      redis: await redisSettings(redis),
      relations,
      entities,
    };
  } finally {
    await unlinkAll(redis, await scanKeys(redis, '*'));
    redis.disconnect();
  }
}
