// The bench's data, written through Tally's real write path (user and post stores, counter
// initialisation, relations.set = the Lua script behind setLikeRelation) and flushed, so
// the feed reads packed counters exactly as in production. Deterministic (seeded PRNG).

import { random, shuffled } from '../../prisma/random.js';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import type { PostRelationKind } from '../../src/domain/relations.js';

export const USERS = 1000;
export const FEED_POSTS = 200;
export const LIKE_TARGET_POSTS = 20;
export const VIEWER_ID = 1;

export interface World {
  userIds: number[];
  /** Posts of the feed, with likes and favs; newest last (creation order). */
  feedPostIds: number[];
  /** Posts with no likes yet, for the like-throughput scenario (older than every feed post). */
  likeTargetIds: number[];
  /** A post the like scenario's warm-up requests like (also older than the feed). */
  warmupPostId: number;
  expected: Map<number, { likes: number; favs: number; liked: boolean; faved: boolean }>;
  /** Bearer token of every user, from app.deps.auth.sign. */
  tokens: Map<number, string>;
}

/** Runs `work` over `items`, `width` at a time (enough to fill the pipelines, not the pools). */
async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(work));
}

export async function seedWorld(env: Record<string, string>): Promise<World> {
  // ROLE=worker: the stores plus the aggregator and flusher, no GraphQL (we call services directly).
  const app = createApp(loadConfig({ ...env, ROLE: 'worker' }));
  await app.start();
  try {
    const services = app.deps;
    const rand = random(2026);
    const userIds = Array.from({ length: USERS }, (_, i) => i + 1);
    await inBatches(userIds, 50, (id) => services.users.ensure(id, `User ${id}`));

    const author = () => userIds[Math.floor(rand() * USERS)]!;
    const createPost = async (title: string) => {
      const { post } = await services.posts.create(author(), title, `Body of ${title}.`);
      await services.postCounters.initialize(post.id);
      return post;
    };
    const likeTargets = [];
    for (let i = 0; i < LIKE_TARGET_POSTS; i++) likeTargets.push(await createPost(`like target ${i}`));
    const warmup = await createPost('like warm-up');
    const feed = [];
    for (let i = 0; i < FEED_POSTS; i++) feed.push(await createPost(`feed post ${i}`));

    // Likes follow a long tail: by popularity rank r a post has ~800/(r+1) likes, so a few
    // posts have hundreds and most have a handful. Ranks are shuffled over the feed.
    const ranks = shuffled(
      feed.map((_, i) => i),
      rand,
    );
    const others = userIds.filter((id) => id !== VIEWER_ID);
    const sample = (k: number) => shuffled(others, rand).slice(0, k);

    const writes: { userId: number; postId: number; authorId: number; kind: PostRelationKind }[] = [];
    const expected: World['expected'] = new Map();
    feed.forEach((post, i) => {
      const likers = sample(Math.floor(800 / (ranks[i]! + 1)));
      const favers = likers.slice(0, Math.floor(likers.length / 4));
      const liked = rand() < 1 / 3;
      const faved = rand() < 1 / 5;
      if (liked) likers.push(VIEWER_ID);
      if (faved) favers.push(VIEWER_ID);
      for (const userId of likers) writes.push({ userId, postId: post.id, authorId: post.authorId, kind: 'LIKE' });
      for (const userId of favers) writes.push({ userId, postId: post.id, authorId: post.authorId, kind: 'FAV' });
      expected.set(post.id, { likes: likers.length, favs: favers.length, liked, faved });
    });
    for (const post of [...likeTargets, warmup]) expected.set(post.id, { likes: 0, favs: 0, liked: false, faved: false });
    await inBatches(writes, 500, (w) => services.relations.set({ ...w, active: true }));

    // Flush: wait until the aggregator has consumed every event, folding each time, until the
    // counters equal the likes written.
    const ids = [...expected.keys()];
    const all = Array.from({ length: app.config.partitions }, (_, p) => p);
    const deadline = Date.now() + 60_000;
    for (;;) {
      await app.workers!.flusher.foldPartitions(all);
      const counts = await services.postCounters.load(ids);
      if (counts.every((c, i) => c?.likes === expected.get(ids[i]!)!.likes && c?.favs === expected.get(ids[i]!)!.favs)) break;
      if (Date.now() > deadline) throw new Error('seeded likes were not flushed into the counters within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }

    const tokens = new Map<number, string>();
    await inBatches(userIds, 100, async (id) => tokens.set(id, await services.auth.sign(id)));

    return {
      userIds,
      tokens,
      feedPostIds: feed.map((p) => p.id),
      likeTargetIds: likeTargets.map((p) => p.id),
      warmupPostId: warmup.id,
      expected,
    };
  } finally {
    await app.stop();
  }
}
