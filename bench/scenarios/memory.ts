// Scenario "memory": Redis bytes per relation and per counted entity on fixed-seed data sets (post id -> likers in arrival order).
import { Redis } from 'ioredis';
import { random, shuffled } from '../../prisma/random.js';
import { packCounters } from '../../src/counters/packedCounters.js';
import { COUNTER_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { KINDS } from '../../src/domain/kinds.js';
import { POST_RELATIONS, type Relation } from '../../src/domain/relations.js';
import { markReactionsIndexed } from '../../src/recovery/reactionIndex.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createKeys } from '../../src/redis/keys.js';
import { type ScriptedRedis, withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { createViewerDigests } from '../../src/services/viewerDigests.js';
import { intSetting } from '../lib/env.js';
import { columns, type Ratio, ratioLine, redisSettings, times } from '../lib/report.js';
import { inGroups, range } from '../lib/seed.js';

const PARTITIONS = 16; // Tally's default; it only sets the width of the `{pN}` tags in key names
const CHUNK_IDS = 32_768; // schema v1's chunk (docs/design.md "Relation storage")
const POST_BATCH = 20; // posts written, measured and deleted at once (bounds what the sparse plain bitmaps take)
const [COUNTED_ENTITIES, SLOTS] = [100_000, 1024]; // SLOTS: entities per fixed-slot string
const BYTES_PER_RELATION_TARGET = 10; // issue 8, sparse and long tail; dense: at most the plain bitmap
const [VIEWERS, VIEWS_EXACT_UP_TO] = [[1, 100, 100_000], 1000]; // issue 27; VIEWS_EXACT_UP_TO's default
const LIKE = POST_RELATIONS.LIKE;
const keys = createKeys('', PARTITIONS);
const post = (id: number) => ({ type: POST, id });

/** User j sets `kinds[j % kinds.length]` (a like without `kinds`); `versus`: the data set its bytes per post are compared with. */
type DataSet = { name: string; description: string; likers: Map<number, number[]>; kinds?: readonly Relation[]; versus?: string };

function distinct(count: number, draw: () => number): number[] {
  const ids = new Set<number>();
  while (ids.size < count) ids.add(draw());
  return [...ids];
}
/** `n` posts, post i liked by `likes(i)` distinct users drawn by `draw`. */
const posts = (n: number, likes: (i: number) => number, draw: () => number) =>
  new Map(range(1, n).map((id, i) => [id, distinct(likes(i), draw)]));
const uniform = (seed: number, ids: number) => {
  const rand = random(seed);
  return () => 1 + Math.floor(rand() * ids);
};

const dense = (n: number) => (): DataSet => ({
  name: `dense ${n.toLocaleString('en-US')}`,
  description: `users 1..${n} (one 32,768-id chunk) like one post, in random order`,
  likers: new Map([[1, shuffled(range(1, n), random(n))]]),
});
const sparse = (): DataSet => ({
  name: 'sparse',
  description: '1,000 posts x 100 likers drawn uniformly among user ids 1..10^8',
  likers: posts(1000, () => 100, uniform(100_000_000, 1e8)),
});
function longTail(): DataSet {
  const rand = random(10_000_000);
  const ranks = shuffled(range(1, 10_000), rand);
  const likes = (i: number) => Math.max(1, Math.round(30_000 * ranks[i]! ** -1.1));
  const description = '10,000 posts, likes by rank r = max(1, round(30,000 r^-1.1)); likers among 10^7 ids, density ∝ 1/√id';
  return { name: 'long tail', description, likers: posts(10_000, likes, () => 1 + Math.floor(1e7 * rand() ** 2)) };
}
const perPost = (name: string, kinds: readonly Relation[], versus?: string) => (): DataSet => ({
  ...{ name, kinds, ...(versus && { versus }), likers: posts(1000, () => kinds.length, uniform(1_000, 1e7)) },
  description: `1,000 posts x ${kinds.map((k) => k.name).join(', ')}, one user each among 10^7 ids`,
});

/** Each data set, built when its turn comes (the long tail alone holds ~10^5 ids). */
const DATA_SETS = [
  ...[dense(100), dense(5_000), dense(32_000), sparse, longTail],
  ...[perPost('one like', [LIKE]), perPost('one reaction', [KINDS.reaction('HEART')!], 'one like')],
  ...[perPost('eight likes', Array(8).fill(LIKE)), perPost('eight reactions', KINDS.reactions, 'eight likes')],
];

type Facts = [id: number, relation: Relation, userIds: number[]];
const factsOf = ({ likers, kinds = [LIKE] }: DataSet): Facts[] =>
  [...likers].flatMap(([id, users]) =>
    [...new Set(kinds)].map((kind): Facts => [id, kind, users.filter((_, j) => kinds[j % kinds.length] === kind)]),
  );

type Pipeline = ReturnType<Redis['pipeline']>;
type Memory = { bytes: number; keys: Record<string, number> };
type Write<T> = (p: Pipeline, item: T) => void;

const wholeRelation =
  (add: (p: Pipeline, key: string, userIds: number[]) => void): Write<Facts> =>
  (p, [id, relation, userIds]) => {
    const key = `rel:${keys.partitionTag(keys.partitionOf(post(id)))}:${keys.relationBase(relation.name, post(id))}`;
    for (const group of inGroups(userIds, 1000)) add(p, key, group);
  };

const RELATION_LAYOUTS: Record<string, [string, Write<Facts>]> = {
  plainBitmap: [
    'plain bitmap',
    (p, [id, { name }, userIds]) => {
      for (const userId of userIds) {
        p.setbit(keys.bitmapChunk(name, post(id), Math.floor(userId / CHUNK_IDS)), userId % CHUNK_IDS, 1);
        p.sadd(keys.chunkIndex(name, post(id)), Math.floor(userId / CHUNK_IDS));
      }
    },
  ],
  set: ['SET', wholeRelation((p, key, group) => p.sadd(key, ...group))],
  hash: ['HASH', wholeRelation((p, key, group) => p.hset(key, ...group.flatMap((u) => [u, 1])))],
};

function entityLayouts(counters: number[][]): Record<string, [string, Write<number>]> {
  const packed = (id: number) => packCounters(counters[id - 1]!);
  const [slotKey, slot] = [(id: number) => `cnt:post:${Math.floor(id / SLOTS)}`, (id: number) => (id % SLOTS) * 20];
  const presized = new Set<string>();
  const hash5 = (p: Pipeline, id: number) => p.hset(keys.counters(post(id)), ...counters[id - 1]!.flatMap((v, i) => [i, v]));
  return {
    packed: ["packed string per entity (Tally's cnt:, 20 bytes)", (p, id) => p.set(keys.counters(post(id)), packed(id))],
    hash5: ['HASH per entity, 5 fields "0".."4"', hash5],
    bucketHash: [
      'bucketed HASH: 100 entities per key, field id -> 20-byte packed counters',
      (p, id) => p.hset(`cnt:post:${Math.floor(id / 100)}`, id, packed(id)),
    ],
    slotString: [
      'fixed-slot string: 1,024 entities per key, SETRANGE (id % 1024) * 20',
      (p, id) => p.setrange(slotKey(id), slot(id), packed(id)),
    ],
    // SETRANGE grows a string as appends do (to twice the length asked); one SET at full length allocates that length.
    slotStringPresized: [
      'the same, each key first SET to 20,480 zero bytes (NX)',
      (p, id) => {
        if (!presized.has(slotKey(id))) p.set(slotKey(id), Buffer.alloc(SLOTS * 20), 'NX');
        presized.add(slotKey(id));
        p.setrange(slotKey(id), slot(id), packed(id));
      },
    ],
  };
}

async function measure(redis: Redis, into: Memory, patterns = ['*'], kindOf?: (key: string) => string) {
  const names: string[] = [];
  for (const match of patterns) for await (const batch of redis.scanStream({ match, count: 1000 })) names.push(...(batch as string[]));
  const sizes = await Promise.all(names.map((key) => redis.memory('USAGE', key, 'SAMPLES', 0)));
  into.bytes += sizes.reduce<number>((sum, b) => sum + (b ?? 0), 0);
  const kinds = kindOf ? names.map(kindOf) : await Promise.all(names.map(async (key) => String(await redis.object('ENCODING', key))));
  for (const kind of kinds) into.keys[kind] = (into.keys[kind] ?? 0) + 1;
  await redis.flushdb();
  return into;
}

async function layoutMemory<T>(redis: Redis, batches: T[][], perPipeline: number, write: Write<T>): Promise<Memory> {
  const memory = { bytes: 0, keys: {} };
  for (const batch of batches) {
    for (const group of inGroups(batch, perPipeline)) {
      const pipeline = redis.pipeline();
      for (const item of group) write(pipeline, item);
      for (const [error] of (await pipeline.exec())!) if (error) throw error;
    }
    await measure(redis, memory);
  }
  return memory;
}

async function measureTally(redis: Redis & ScriptedRedis, set: DataSet): Promise<Memory> {
  const store = createRelationStore(redis, keys);
  // A whole deployment, as after its first start.
  await createReadiness(redis, keys).markAllReady();
  await markReactionsIndexed(redis, keys);
  const writes = factsOf(set).flatMap(([id, relation, users]) => users.map((userId) => ({ entity: post(id), userId, relation })));
  let changed = 0;
  for (const batch of inGroups(writes, 2000)) {
    const results = await Promise.all(batch.map((w) => store.setFact({ ...w, authorId: 1, active: true })));
    changed += results.filter((r) => r.changed).length;
    await redis.del(...range(0, PARTITIONS).map((p) => keys.outbox(p))); // events are not facts, and nothing consumes them here
  }
  // Every like is new: anything else means the facts went somewhere this scan will not look.
  if (changed !== writes.length) throw new Error(`memory/${set.name}: Tally reported ${changed} changes for ${writes.length} new likes`);
  // The relation sets and the reaction index (lua/includes/reactionIndex.lua).
  return measure(redis, { bytes: 0, keys: {} }, ['bm*', 'ra*', 'rx:*'], (key) => /^(bmi|bm|rai|ra|rx):/.exec(key)?.[1] ?? 'other');
}

async function measureRelations(redis: Redis & ScriptedRedis, set: DataSet) {
  const relations = [...set.likers.values()].reduce((n, ids) => n + ids.length, 0);
  const layouts: Record<string, Memory> = { tally: await measureTally(redis, set) };
  for (const [layout, [, write]] of Object.entries(RELATION_LAYOUTS))
    layouts[layout] = await layoutMemory(redis, inGroups(factsOf(set), POST_BATCH), POST_BATCH, write);
  const perRelation = Object.fromEntries(Object.entries(layouts).map(([l, m]) => [l, { ...m, perRelation: m.bytes / relations }]));
  // The packed counters a flush writes for these facts (each post's string ends at its last non-zero slot).
  const slots = new Map([...set.likers.keys()].map((id) => [id, Array<number>(COUNTER_SLOTS).fill(0)]));
  for (const [id, { slot }, users] of factsOf(set)) slots.get(id)![slot!] = users.length;
  const counters = await layoutMemory(redis, [[...slots]], 1000, (p, [id, counts]) => p.set(keys.counters(post(id)), packCounters(counts)));
  const perPost = (layouts.tally!.bytes + counters.bytes) / set.likers.size;
  const [{ name: dataSet, description, versus }, entities, kinds] = [set, set.likers.size, set.kinds?.map((kind) => kind.name)];
  return { dataSet, description, kinds, versus, entities, relations, layouts: perRelation, counters, perPost };
}

async function measureEntities(redis: Redis) {
  const rand = random(COUNTER_SLOTS);
  const scale = [20_000, 2_000, 300, 100, 50]; // plausible magnitudes of an entity's five counters (reads >> likes >> favs...)
  const counters = range(0, COUNTED_ENTITIES).map(() => range(0, COUNTER_SLOTS).map((i) => Math.floor(scale[i]! * rand() ** 3)));
  const results = [];
  for (const [layout, [description, write]] of Object.entries(entityLayouts(counters))) {
    const { bytes, keys: encodings } = await layoutMemory(redis, [range(1, COUNTED_ENTITIES)], 1000, write);
    results.push({ layout, description, entities: COUNTED_ENTITIES, bytes, perEntity: bytes / COUNTED_ENTITIES, keys: encodings });
  }
  return results;
}

/** Bytes of one post's sketch of distinct viewers with n of them (fed as recordViews feeds it), and of a viewer's window per post viewed. */
async function measureViews(redis: Redis & ScriptedRedis) {
  const [scripts, digests, partition] = [createScripts(redis, keys), createViewerDigests('bench views'), keys.partitionOf(post(1))];
  const sketches = [];
  for (const viewers of VIEWERS) {
    for (const users of inGroups(range(1, viewers), 1000)) {
      await scripts.addViews(users.map((u) => ({ entity: post(1), digest: digests.user(u) })));
      await scripts.foldViews({ partition, exactUpTo: VIEWS_EXACT_UP_TO, limit: 1000 });
    }
    const bytes = Number(await redis.memory('USAGE', keys.viewers(post(1)), 'SAMPLES', 0));
    const estimate = await redis.pfcount(keys.viewers(post(1))).catch(() => viewers); // an exact list is no HyperLogLog
    sketches.push({ viewers, bytes, perViewer: bytes / viewers, error: (estimate - viewers) / viewers });
    await redis.flushdb();
  }
  // One viewer's window after viewing 1,000 posts.
  const window = keys.viewWindow(1);
  for (const ids of inGroups(range(1, 1000), 100)) await scripts.claimViews({ window, windowMs: 3_600_000, entities: ids.map(post) });
  const windowBytes = Number(await redis.memory('USAGE', window, 'SAMPLES', 0));
  await redis.flushdb();
  return { sketches, windowPerView: windowBytes / 1000 };
}

export const memoryDb = () => intSetting('BENCH_MEMORY_DB', 15, 10_000, 0);

export type MemoryResults = Awaited<ReturnType<typeof runMemoryScenario>>;

export async function runMemoryScenario(opts: { redisUrl: string; db: number; log: (line: string) => void }) {
  const redis = withScripts(new Redis(opts.redisUrl, { db: opts.db, enableAutoPipelining: true }));
  const held = await redis.dbsize();
  if (held > 0) {
    redis.disconnect();
    throw new Error(`memory: Redis database ${opts.db} holds ${held} keys; the scenario needs an empty one (BENCH_MEMORY_DB)`);
  }
  try {
    const relations = [];
    for (const make of DATA_SETS) {
      const row = await measureRelations(redis, make());
      relations.push(row);
      const per = Object.entries(row.layouts).map(([l, m]) => `${l} ${m.perRelation.toFixed(1)}`);
      opts.log(`  ${row.dataSet}: ${row.relations} relations on ${row.entities} posts; B/relation ${per.join(', ')}`);
    }
    const [entities, views] = [await measureEntities(redis), await measureViews(redis)];
    const info = await redisSettings(redis, ['hash-max-listpack-entries', 'hash-max-listpack-value', 'set-max-intset-entries']);
    return { method: 'docs/performance.md#the-bench', db: opts.db, redis: info, relations, entities, views };
  } finally {
    await redis.flushdb();
    redis.disconnect();
  }
}

const bytes = (x: number) => `${x.toFixed(x >= 100 ? 0 : x >= 10 ? 1 : 2)} B`;

export const memoryRatios = (results: MemoryResults): Ratio[] =>
  results.relations.flatMap(({ dataSet, relations, layouts, kinds, versus, perPost }): Ratio[] | Ratio => {
    const { tally, plainBitmap: plain, set, hash } = layouts as Record<string, (typeof layouts)[string]>;
    if (kinds) {
      const base = results.relations.find((r) => r.dataSet === versus)?.perPost;
      if (base === undefined) return [];
      const detail = `${bytes(perPost)} vs ${bytes(base)} per post: relations + packed counters`;
      return [{ label: `Tally memory per post, ${dataSet} / ${versus}`, value: perPost / base, detail }];
    }
    if (!dataSet.startsWith('dense')) {
      const detail = `plain bitmap ${bytes(plain!.perRelation)}, ${times(plain!.bytes / tally!.bytes)} Tally; SET ${bytes(set!.perRelation)}, HASH ${bytes(hash!.perRelation)}`;
      const label = `Tally memory per relation, ${dataSet}`;
      return { label, value: tally!.perRelation, format: bytes, target: BYTES_PER_RELATION_TARGET, atMost: true, detail };
    }
    const detail = `${tally!.bytes} B vs ${plain!.bytes} B for ${relations} relations`;
    return { label: `Tally / plain bitmap memory, ${dataSet}`, value: tally!.bytes / plain!.bytes, target: 1, atMost: true, detail };
  });

const keyCounts = (counts: Record<string, number>) => Array.from(Object.entries(counts), ([k, n]) => `${n} ${k}`).join(', ');

export function memoryTable(results: MemoryResults): string {
  const layouts = ['tally', ...Object.keys(RELATION_LAYOUTS)];
  const perRelation = columns(
    [
      ...['memory per relation', 'posts', 'likes', 'Tally B/like', ...Object.values(RELATION_LAYOUTS).map(([c]) => c)],
      ...['Tally / plain', 'Tally B/post + counters', 'Tally keys'],
    ],
    results.relations.map((row) => [
      ...[row.dataSet, String(row.entities), String(row.relations), ...layouts.map((l) => bytes(row.layouts[l]!.perRelation))],
      ...[times(row.layouts.tally!.bytes / row.layouts.plainBitmap!.bytes), bytes(row.perPost), keyCounts(row.layouts.tally!.keys)],
    ]),
    (i) => i >= 1 && i < 9,
  );
  const packed = results.entities[0]!;
  const perEntity = columns(
    [`memory per counted entity (${packed.entities.toLocaleString('en-US')} posts)`, 'B/entity', 'vs packed', 'keys'],
    results.entities.map((e) => [e.description, bytes(e.perEntity), times(e.bytes / packed.bytes), keyCounts(e.keys)]),
    (i) => i >= 1 && i < 3,
  );
  const views = columns(
    ['memory per viewed post: sketch of distinct viewers', 'B/post', 'B/viewer', 'unique error'],
    results.views.sketches.map((s) => [`${s.viewers} viewers`, String(s.bytes), bytes(s.perViewer), `${(s.error * 100).toFixed(2)} %`]),
    (i) => i >= 1,
  );
  const window = `A viewer's window (VIEW_WINDOW_MS): ${bytes(results.views.windowPerView)} per post viewed, kept one window.`;
  const redis = Object.entries(results.redis).map(([name, value]) => `${name} ${value}`);
  const note = `Keys named as in a deployment without REDIS_KEY_PREFIX, in Redis database ${results.db} (Redis ${redis.join(', ')}).`;
  return [perRelation, '', perEntity, '', views, window, note, '', ...memoryRatios(results).map(ratioLine)].join('\n');
}
