// The reaction index (lua/includes/reactionIndex.lua) on real Redis: after random reactions
// written through the write path (setRelation) and the recovery path (writeFact), the viewer
// state read through the index equals a plain model and the per-kind sets; an entity past the
// index's size is read from its sets; and reactions written before the index (its hashes,
// partition marks and record removed) read the same, get indexed on their next write, and are
// indexed whole by the builder.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { random } from '../../prisma/random.js';
import type { EntityRef } from '../../src/domain/entities.js';
import { KINDS } from '../../src/domain/kinds.js';
import type { Relation } from '../../src/domain/relations.js';
import { createLogger } from '../../src/log.js';
import { createReactionIndexBuilder, markReactionsIndexed } from '../../src/recovery/reactionIndex.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createKeys, META } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';

const PARTITIONS = 4;
const prefix = uniquePrefix('rx');
const redis = withScripts(new Redis(TEST_REDIS_URL));
const keys = createKeys(prefix, PARTITIONS);
const store = createRelationStore(redis, keys);
const scripts = createScripts(redis, keys);
const builder = createReactionIndexBuilder(redis, keys, createLogger({ logLevel: 'silent' }));
const REACTIONS = KINDS.reactions;
const USERS = 40;

beforeAll(() => createReadiness(redis, keys).markAllReady());
afterAll(async () => {
  await deleteKeys(prefix);
  redis.disconnect();
});

let nextPost = 1;
const newPosts = (n: number): EntityRef[] => Array.from({ length: n }, () => ({ type: 'post', id: nextPost++ }));

/** Who holds which reaction on which post, as the writes left it. */
class Model {
  private held = new Map<string, Set<string>>();
  set(post: EntityRef, user: number, kind: Relation, active: boolean) {
    const key = `${post.id}:${user}`;
    const kinds = this.held.get(key) ?? new Set();
    if (active) kinds.add(kind.name);
    else kinds.delete(kind.name);
    this.held.set(key, kinds);
  }
  of(post: EntityRef, user: number): string[] {
    return [...(this.held.get(`${post.id}:${user}`) ?? [])].sort();
  }
}

/** Random reactions on `posts`, half through setRelation and half through writeFact. */
async function react(posts: EntityRef[], model: Model, seed: number, changes = 600, users = USERS) {
  const next = random(seed);
  for (let i = 0; i < changes; i++) {
    const post = posts[Math.floor(next() * posts.length)]!;
    const user = 1 + Math.floor(next() * users);
    const kind = REACTIONS[Math.floor(next() * REACTIONS.length)]!;
    const active = next() < 0.7;
    if (next() < 0.5) await store.setFact({ userId: user, entity: post, relation: kind, authorId: 0, active });
    else await scripts.writeFact({ relation: kind.name, entity: post, userId: user, active });
    model.set(post, user, kind, active);
  }
}

/** Every user's reactions on every post as the page's viewer state reads them. */
async function viewerReactions(posts: EntityRef[], users = USERS): Promise<string[][][]> {
  const ids = posts.map((p) => p.id);
  return Promise.all(
    Array.from({ length: users }, async (_, u) => (await store.viewerStates(u + 1, ids, REACTIONS)).map((state) => [...state!].sort())),
  );
}

const modelReactions = (posts: EntityRef[], model: Model, users = USERS) =>
  Array.from({ length: users }, (_, u) => posts.map((post) => model.of(post, u + 1)));

/** Forgets the index, as a deployment upgraded from a version without it holds its reactions. */
async function dropIndex(posts: EntityRef[]) {
  await redis.del(...posts.map((post) => keys.reactionIndex(post)));
  await redis.del(...Array.from({ length: PARTITIONS }, (_, p) => keys.reactionsIndexed(p)));
  await redis.hdel(keys.meta(), META.reactionIndex);
}

const indexOf = (post: EntityRef) => redis.hgetall(keys.reactionIndex(post));

describe('reaction index', () => {
  it('reads what the writes left, through the index, in indexed and unindexed partitions', async () => {
    const posts = newPosts(24);
    const model = new Model();
    await react(posts, model, 7);
    expect(await viewerReactions(posts)).toEqual(modelReactions(posts, model));
    // Every post some user reacted to has its index (built from its sets on its first write).
    const indexed = await Promise.all(posts.map(indexOf));
    expect(indexed.filter((fields) => Object.keys(fields).length > 0).length).toBeGreaterThan(posts.length / 2);

    await markReactionsIndexed(redis, keys);
    await react(posts, model, 8);
    expect(await viewerReactions(posts)).toEqual(modelReactions(posts, model));
  });

  it('an entity past the index size is read from its sets, and stays right', async () => {
    const [post] = newPosts(1);
    const model = new Model();
    const many = 150; // past INDEX_MAX_USERS
    for (let user = 1; user <= many; user++) {
      const kind = REACTIONS[user % REACTIONS.length]!;
      await store.setFact({ userId: user, entity: post!, relation: kind, authorId: 0, active: true });
      model.set(post!, user, kind, true);
    }
    expect(Object.keys(await indexOf(post!))).toEqual(['+']);
    await react([post!], model, 9, 200, many);
    expect(await viewerReactions([post!], many)).toEqual(modelReactions([post!], model, many));
  });

  it('reactions from before the index read the same, and are indexed on their next write and by the builder', async () => {
    const posts = newPosts(30);
    const model = new Model();
    await react(posts, model, 10);
    const built = await Promise.all(posts.map(indexOf));
    await dropIndex(posts);

    expect(await viewerReactions(posts)).toEqual(modelReactions(posts, model));
    // A write builds its entity's index from the sets first, then records itself.
    const [first] = posts;
    await store.setFact({ userId: 1, entity: first!, relation: REACTIONS[0]!, authorId: 0, active: true });
    model.set(first!, 1, REACTIONS[0]!, true);
    const firstIndex = await indexOf(first!);
    expect(Object.keys(firstIndex).length).toBeGreaterThan(0);

    expect(await builder.isWhole()).toBe(false);
    expect(await builder.build()).toBe('built');
    expect(await builder.isWhole()).toBe(true);
    const rebuilt = await Promise.all(posts.map(indexOf));
    // The builder left the index a write had built alone, and built the others as the writes had.
    expect(rebuilt[0]).toEqual(firstIndex);
    const sortSlots = (fields: Record<string, string>) =>
      Object.fromEntries(Object.entries(fields).map(([user, slots]) => [user, [...slots].sort().join('')]));
    expect(rebuilt.slice(1).map(sortSlots)).toEqual(built.slice(1).map(sortSlots));
    expect(await redis.exists(...Array.from({ length: PARTITIONS }, (_, p) => keys.reactionsIndexed(p)))).toBe(PARTITIONS);
    expect(await viewerReactions(posts)).toEqual(modelReactions(posts, model));
  });

  it('the builder reads a set whose ids moved into a bitmap chunk as well as one in a block', async () => {
    const [post] = newPosts(1);
    const model = new Model();
    const [dense, sparse] = [REACTIONS[0]!, REACTIONS[1]!];
    for (let user = 1; user <= 30; user++) {
      await store.setFact({ userId: user, entity: post!, relation: dense, authorId: 0, active: true });
      model.set(post!, user, dense, true);
    }
    for (const user of [3, 31, 40]) {
      await store.setFact({ userId: user, entity: post!, relation: sparse, authorId: 0, active: true });
      model.set(post!, user, sparse, true);
    }
    // Thirty ids in a row are smaller as a bitmap than as a block: the set holds them in one.
    expect(await redis.scard(keys.chunkIndex(dense.name, post!))).toBe(1);
    expect(await redis.scard(keys.chunkIndex(sparse.name, post!))).toBe(0);
    const built = await indexOf(post!);
    await dropIndex([post!]);
    expect(await builder.build()).toBe('built');
    expect(await indexOf(post!)).toEqual(built);
    expect(await viewerReactions([post!])).toEqual(modelReactions([post!], model));
  });

  it('a second builder waits for the one at work', async () => {
    await redis.set(keys.reactionIndexLock(), 'someone else', 'PX', 5000);
    expect(await builder.build()).toBe('busy');
    await redis.del(keys.reactionIndexLock());
  });
});
