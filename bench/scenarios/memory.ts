// Scenario "memory": what one relation (a user liking a post) and one counted entity cost in
// Redis. No servers: Tally's facts go through its real write path (the setRelation script);
// the layouts it is compared with are built directly. Key names are a deployment's, so it
// needs an empty Redis database of its own. Method: docs/performance.md ("The bench").
import { Redis } from 'ioredis';
import { random } from '../../prisma/random.js';
import { packCounters } from '../../src/counters/packedCounters.js';
import { COUNTER_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createKeys } from '../../src/redis/keys.js';
import { type ScriptedRedis, withScripts } from '../../src/redis/luaScripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { range } from '../lib/seed.js';
import { DATA_SETS, type DataSet } from './memoryData.js';
import { build, inGroups, measureAndDelete, memoryOf, type Pipeline, scanKeys, unlinkAll } from './memoryRedis.js';

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
/** Entities per fixed-slot string. */
const SLOTS = 1024;

export type RelationLayout = 'tally' | 'plainBitmap' | 'set' | 'hash';
export const RELATION_LAYOUTS: Record<RelationLayout, string> = {
  tally: 'Tally, as its setRelation script stores a relation (every bm* and ra* key)',
  plainBitmap: 'plain bitmap (SETBIT bm:<entity>:<chunk> + SET of chunks)',
  set: 'SET of user ids (SADD)',
  hash: 'HASH user id -> 1 (HSET)',
};
export type EntityLayout = 'packed' | 'hash5' | 'bucketHash' | 'slotString' | 'slotStringPresized';
export const ENTITY_LAYOUTS: Record<EntityLayout, string> = {
  packed: "packed string per entity (Tally's cnt:, 20 bytes)",
  hash5: 'HASH per entity, 5 fields "0".."4"',
  bucketHash: 'bucketed HASH: 100 entities per key, field id -> 20-byte packed counters',
  slotString: 'fixed-slot string: 1,024 entities per key, SETRANGE (id % 1024) * 20',
  slotStringPresized: 'the same, each key first SET to 20,480 zero bytes (NX)',
};

export type MemoryResults = Awaited<ReturnType<typeof runMemoryScenario>>;

const keys = createKeys('', PARTITIONS);
const post = (id: number) => ({ type: POST, id });
/** Bytes and keys (by kind for Tally, by OBJECT ENCODING otherwise) of one layout on one data set. */
type LayoutMemory = { bytes: number; perRelation: number; keys: Record<string, number> };

const relationsIn = (set: DataSet) => [...set.likers.values()].reduce((n, ids) => n + ids.length, 0);

/** Tally's facts, written the way a like writes them. */
async function measureTally(redis: ScriptedServer, set: DataSet): Promise<LayoutMemory> {
  const store = createRelationStore(redis, keys);
  await createReadiness(redis, keys).markAllReady(); // a whole deployment, as after its first start
  const outboxes = range(0, PARTITIONS).map((p) => keys.outbox(p));
  const writes = [...set.likers].flatMap(([id, users]) => users.map((userId) => ({ id, userId })));
  let changed = 0;
  for (const batch of inGroups(writes, WRITE_BATCH)) {
    const results = await Promise.all(
      batch.map(({ id, userId }) => store.setFact({ userId, entity: post(id), relation: LIKE, authorId: 1, active: true })),
    );
    changed += results.filter((r) => r.changed).length;
    await redis.del(...outboxes); // events are not facts, and nothing consumes them here
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

/** A whole relation in one key (the SET and HASH layouts), named like Tally's keys. */
const relationKey = (id: number) => `rel:${keys.partitionTag(keys.partitionOf(post(id)))}:${keys.relationBase(LIKE.name, post(id))}`;

/** The layouts Tally is compared with: each queues one post's likes and returns the keys it wrote. */
const COMPARED: Record<Exclude<RelationLayout, 'tally'>, (pipeline: Pipeline, entry: [number, number[]]) => string[]> = {
  plainBitmap: (pipeline, [id, userIds]) => {
    const written = [keys.chunkIndex(LIKE.name, post(id))];
    for (const userId of userIds) {
      const chunk = Math.floor(userId / CHUNK_IDS);
      const key = keys.bitmapChunk(LIKE.name, post(id), chunk);
      pipeline.setbit(key, userId % CHUNK_IDS, 1);
      pipeline.sadd(written[0]!, chunk);
      written.push(key);
    }
    return written;
  },
  set: (pipeline, [id, userIds]) => {
    for (const group of inGroups(userIds, 1000)) pipeline.sadd(relationKey(id), ...group);
    return [relationKey(id)];
  },
  hash: (pipeline, [id, userIds]) => {
    for (const group of inGroups(userIds, 1000)) pipeline.hset(relationKey(id), ...group.flatMap((u) => [u, 1]));
    return [relationKey(id)];
  },
};

async function measureRelations(redis: ScriptedServer, set: DataSet) {
  const layouts = { tally: await measureTally(redis, set) } as Record<RelationLayout, LayoutMemory>;
  for (const [layout, write] of Object.entries(COMPARED) as [RelationLayout, (typeof COMPARED)['set']][]) {
    const encodings: Record<string, number> = {};
    let bytes = 0;
    for (const batch of inGroups([...set.likers], ENTITY_BATCH))
      bytes += await measureAndDelete(redis, await build(redis, [batch], write), encodings);
    layouts[layout] = { bytes, perRelation: bytes / relationsIn(set), keys: encodings };
  }
  return { dataSet: set.name, description: set.description, entities: set.likers.size, relations: relationsIn(set), layouts };
}

async function measureEntities(redis: Redis) {
  const rand = random(COUNTER_SLOTS);
  // Plausible magnitudes of an entity's five counters (reads >> likes >> favs...).
  const scale = [20_000, 2_000, 300, 100, 50];
  const counters = range(0, COUNTED_ENTITIES).map(() => range(0, COUNTER_SLOTS).map((i) => Math.floor(scale[i]! * rand() ** 3)));
  const packedOf = (id: number) => packCounters(counters[id - 1]!);
  const bucketKey = (id: number) => `cnt:post:${Math.floor(id / 100)}`;
  const slotKey = (id: number) => `cnt:post:${Math.floor(id / SLOTS)}`;
  const slot = (id: number) => (id % SLOTS) * 20;
  const presized = new Set<string>();
  /** Each queues one entity's counters and returns the key it wrote. */
  const layouts: Record<EntityLayout, (pipeline: Pipeline, id: number) => string> = {
    packed: (pipeline, id) => {
      pipeline.set(keys.counters(post(id)), packedOf(id));
      return keys.counters(post(id));
    },
    hash5: (pipeline, id) => {
      pipeline.hset(keys.counters(post(id)), ...counters[id - 1]!.flatMap((v, i) => [String(i), v]));
      return keys.counters(post(id));
    },
    bucketHash: (pipeline, id) => {
      pipeline.hset(bucketKey(id), id, packedOf(id));
      return bucketKey(id);
    },
    slotString: (pipeline, id) => {
      pipeline.setrange(slotKey(id), slot(id), packedOf(id));
      return slotKey(id);
    },
    // SETRANGE grows a string the way every append does (to twice the length asked, below
    // 1 MB); a string created at its full length by SET is allocated at that length.
    slotStringPresized: (pipeline, id) => {
      if (!presized.has(slotKey(id))) pipeline.set(slotKey(id), Buffer.alloc(SLOTS * 20), 'NX');
      presized.add(slotKey(id));
      pipeline.setrange(slotKey(id), slot(id), packedOf(id));
      return slotKey(id);
    },
  };
  const ids = range(1, COUNTED_ENTITIES);
  const results = [];
  // Each layout is written, measured and deleted before the next: they may share names.
  for (const [layout, write] of Object.entries(layouts) as [EntityLayout, (typeof layouts)['packed']][]) {
    const encodings: Record<string, number> = {};
    const bytes = await measureAndDelete(redis, await build(redis, inGroups(ids, 1000), (p, id) => [write(p, id)]), encodings);
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

/** Measures every layout on every data set in Redis database `db`, which must be empty, and empties it again. */
export async function runMemoryScenario(opts: { redisUrl: string; db: number; log?: (line: string) => void }) {
  const log = opts.log ?? (() => {});
  const redis = withScripts(new Redis(opts.redisUrl, { db: opts.db, enableAutoPipelining: true }));
  const held = await redis.dbsize();
  if (held > 0) {
    redis.disconnect();
    throw new Error(`memory: Redis database ${opts.db} holds ${held} keys; the scenario needs an empty one (BENCH_MEMORY_DB)`);
  }
  try {
    const relations = [];
    for (const make of DATA_SETS) {
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
