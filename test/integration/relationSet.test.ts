// Relation facts in their adaptive layout (lua/includes/relationSet.lua), on real Redis:
// sparse ids in array blocks, dense chunks as bitmaps, blocks split past their limit, and
// every reader (membership, counting) agreeing with a plain Set after random changes made
// through the write path (setRelation) and the recovery path (writeFact).

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntityRef } from '../../src/domain/entities.js';
import { KINDS, TYPES } from '../../src/domain/kinds.js';
import { LIKE } from '../../src/domain/relations.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createKeys } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';

const prefix = uniquePrefix('rs');
const redis = withScripts(new Redis(TEST_REDIS_URL));
const keys = createKeys(prefix, 16);
const store = createRelationStore(redis, keys);
const scripts = createScripts(redis, keys);
const CHUNK = 32_768;

beforeAll(() => createReadiness(redis, keys).markAllReady());
afterAll(async () => {
  await deleteKeys(prefix);
  redis.disconnect();
});

let nextPost = 1;
const newPost = (): EntityRef => ({ type: 'post', id: nextPost++ });

/** A deterministic generator, so a failure can be replayed. */
function random(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1_664_525) + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

const like = (post: EntityRef, userId: number, active = true) =>
  store.setFact({ userId, entity: post, relation: LIKE, authorId: 1, active });

const restore = (post: EntityRef, userId: number, active: boolean) =>
  scripts.writeFact({ relation: LIKE.name, entity: post, userId, active });

async function count(post: EntityRef): Promise<number> {
  const { counters } = await scripts.countFromFacts(post);
  return counters[LIKE.slot!]!;
}

/** Membership as the feed reads it: the viewer's state. */
const members = (post: EntityRef, userIds: number[]) =>
  Promise.all(userIds.map((u) => store.viewerStates(u, [post.id]).then(([state]) => state!.has(LIKE.name))));

/** A packed id list as lua/includes/relationSet.lua stores it: a width byte, then sorted ids. */
function decodeList(raw: Buffer | null): number[] {
  if (!raw) return [];
  const width = raw[0]!;
  const valueAt = (i: number) => raw.subarray(1 + i * width, 1 + (i + 1) * width).reduce((v, byte) => v * 256 + byte, 0);
  return Array.from({ length: (raw.length - 1) / width }, (_, i) => valueAt(i));
}

/** The relation's keys: bitmap chunks and array blocks with their sizes. */
async function layout(post: EntityRef) {
  const bitmaps = (await redis.smembers(keys.chunkIndex('like', post))).map(Number).sort((a, b) => a - b);
  const starts = decodeList(await redis.getBuffer(keys.arrayIndex('like', post)));
  const blocks = await Promise.all(
    (starts.length > 0 ? starts : [0]).map(async (start) => {
      const raw = await redis.getBuffer(keys.arrayBlock('like', post, start));
      return { start, width: raw?.[0] ?? 0, ids: decodeList(raw) };
    }),
  );
  for (const block of blocks) expect(block.ids).toEqual([...block.ids].sort((a, b) => a - b)); // sorted, as searched
  return { bitmaps, blocks: blocks.filter((b) => b.ids.length > 0).map((b) => ({ ...b, ids: b.ids.length })) };
}

async function expectSame(post: EntityRef, truth: Set<number>, probes: number[]) {
  expect(await count(post)).toBe(truth.size);
  expect(await members(post, probes)).toEqual(probes.map((u) => truth.has(u)));
}

describe('relation sets', () => {
  it('keeps sparse ids in one array block of 4-byte ids, no bitmap', async () => {
    const post = newPost();
    const rand = random(1);
    const ids = Array.from({ length: 100 }, () => 1 + Math.floor(rand() * 1e8));
    await Promise.all(ids.map((u) => like(post, u)));
    expect(await layout(post)).toEqual({ bitmaps: [], blocks: [{ start: 0, width: 4, ids: new Set(ids).size }] });
    await expectSame(post, new Set(ids), [...ids.slice(0, 20), 5, 1e8 + 1]);
  });

  it('moves a dense chunk to a bitmap once the bitmap is smaller, and keeps readers right', async () => {
    const post = newPost();
    for (let u = 1; u <= 40; u++) await like(post, u);
    // 40 ids of chunk 0 take 160 bytes as an array, a 6-byte bitmap (+ a key) instead.
    expect(await layout(post)).toEqual({ bitmaps: [0], blocks: [] });
    await like(post, 3 * CHUNK + 12_345); // a lone id elsewhere stays in the array
    expect(await layout(post)).toEqual({ bitmaps: [0], blocks: [{ start: 0, width: 4, ids: 1 }] });
    await like(post, 7, false);
    const truth = new Set([...Array.from({ length: 40 }, (_, i) => i + 1)].filter((u) => u !== 7).concat(3 * CHUNK + 12_345));
    await expectSame(post, truth, [1, 7, 40, 41, 3 * CHUNK + 12_345, 3 * CHUNK + 12_346]);
  });

  it('splits a full block at a chunk boundary, so no write rewrites more than a few KiB', async () => {
    const post = newPost();
    const rand = random(2);
    const truth = new Set<number>();
    while (truth.size < 3000) truth.add(1 + Math.floor(rand() * 1e9));
    const ids = [...truth];
    for (let i = 0; i < ids.length; i += 200) await Promise.all(ids.slice(i, i + 200).map((u) => like(post, u)));
    const { bitmaps, blocks } = await layout(post);
    expect(bitmaps).toEqual([]);
    expect(blocks.length).toBeGreaterThanOrEqual(3);
    expect(blocks.every((b) => b.ids <= 1024)).toBe(true);
    expect(blocks.reduce((n, b) => n + b.ids, 0)).toBe(3000);
    await expectSame(post, truth, [...ids.slice(0, 30), ...ids.slice(-30), 0, 2e9]);
  });

  it('widens a block for ids beyond 32 bits, up to the largest safe integer', async () => {
    const post = newPost();
    const big = [2 ** 32, 1e12, Number.MAX_SAFE_INTEGER];
    await like(post, 5);
    for (const u of big) await like(post, u);
    const { blocks } = await layout(post);
    expect(blocks).toEqual([{ start: 0, width: 7, ids: 4 }]);
    await expectSame(post, new Set([5, ...big]), [5, ...big, 2 ** 32 + 1, 6]);
  });

  it('agrees with a plain Set after random likes and unlikes from the write and recovery paths', async () => {
    const post = newPost();
    const rand = random(3);
    const truth = new Set<number>();
    // Mixed density: a crowded chunk, a few busy chunks, and ids scattered over 10^8.
    const pick = () => {
      const r = rand();
      if (r < 0.4) return Math.floor(rand() * 3000);
      if (r < 0.7) return 5 * CHUNK + Math.floor(rand() * 4 * CHUNK);
      return Math.floor(rand() * 1e8);
    };
    for (let round = 0; round < 30; round++) {
      const ops = Array.from({ length: 200 }, () => ({ u: pick(), on: rand() < 0.75, viaRecovery: rand() < 0.3 }));
      for (const { u, on, viaRecovery } of ops) {
        await (viaRecovery ? restore(post, u, on) : like(post, u, on));
        if (on) truth.add(u);
        else truth.delete(u);
      }
    }
    const probes = [...truth].slice(0, 100).concat(Array.from({ length: 100 }, pick));
    await expectSame(post, truth, probes);
    const { bitmaps, blocks } = await layout(post);
    expect(bitmaps).toContain(0); // the crowded chunk was promoted
    expect(blocks.every((b) => b.ids <= 1024)).toBe(true);
  });

  it('reports a change only when the fact really changed', async () => {
    const post = newPost();
    expect((await like(post, 9)).changed).toBe(true);
    expect((await like(post, 9)).changed).toBe(false);
    expect(await restore(post, 9, true)).toBe(false); // already so: nothing written
    expect(await restore(post, 9, false)).toBe(true);
    expect((await like(post, 9, false)).changed).toBe(false);
    expect(await count(post)).toBe(0);
    expect(await redis.exists(keys.arrayBlock('like', post, 0))).toBe(0); // an empty block is no key
  });
  it('reads relations stored in the schema v1 layout, where every chunk was a bitmap, and writes on from there', async () => {
    const post = newPost();
    const legacy = [3, 40_000, 9 * CHUNK + 1];
    for (const u of legacy) {
      const chunk = Math.floor(u / CHUNK);
      await redis.setbit(keys.bitmapChunk('like', post, chunk), u % CHUNK, 1);
      await redis.sadd(keys.chunkIndex('like', post), chunk);
    }
    await expectSame(post, new Set(legacy), [...legacy, 4, 9 * CHUNK]);
    expect((await like(post, 40_000)).changed).toBe(false); // already in, as its bitmap says
    expect((await like(post, 20 * CHUNK + 5)).changed).toBe(true); // a new chunk starts in a block
    expect(await layout(post)).toEqual({ bitmaps: [0, 1, 9], blocks: [{ start: 0, width: 4, ids: 1 }] });
    await expectSame(post, new Set([...legacy, 20 * CHUNK + 5]), [...legacy, 20 * CHUNK + 5, 20 * CHUNK + 6]);
  });

  it('answers a page of posts in every partition with one script call on a single Redis', async () => {
    const posts = Array.from({ length: 40 }, newPost);
    expect(new Set(posts.map(keys.partitionOf)).size).toBeGreaterThan(8);
    const viewer = 77;
    await Promise.all(posts.map((post, i) => (i % 3 === 0 ? like(post, viewer) : like(post, 1000 + i))));
    const calls: string[] = [];
    const send = redis.sendCommand.bind(redis);
    redis.sendCommand = (command, ...rest) => {
      calls.push(command.name);
      return send(command, ...rest);
    };
    try {
      const states = (
        await store.viewerStates(
          viewer,
          posts.map((p) => p.id),
        )
      ).map((s) => s!);
      expect(states.map((s) => s.has(LIKE.name))).toEqual(posts.map((_, i) => i % 3 === 0));
    } finally {
      redis.sendCommand = send;
    }
    expect(calls.filter((name) => name === 'evalsha' || name === 'eval')).toHaveLength(1);
  });

  it('answers a call whose keys exceed what one Lua unpack takes (entities × kinds × 3 keys)', async () => {
    const posts = Array.from({ length: 300 }, newPost); // 300 × 11 kinds × 3 keys: 9,900 keys
    const kinds = TYPES.kindsOf('post');
    expect(posts.length * kinds.length * 3).toBeGreaterThan(8000);
    const viewer = 91;
    const heart = KINDS.reaction('HEART')!;
    for (const [i, post] of posts.entries()) {
      if (i % 7 === 0) await like(post, viewer);
      if (i % 5 === 0) await store.setFact({ userId: viewer, entity: post, relation: heart, authorId: 1, active: true });
    }
    const states = await store.viewerStates(
      viewer,
      posts.map((p) => p.id),
      kinds,
    );
    expect(states.map((s) => [...s!].sort())).toEqual(
      posts.map((_, i) => [...(i % 7 === 0 ? [LIKE.name] : []), ...(i % 5 === 0 ? [heart.name] : [])].sort()),
    );
  });
});
