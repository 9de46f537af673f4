// The bench's one seeding path: Tally's own commands (as an operator's, as `npm run seed` uses them), users in bulk SQL.

import { Redis } from 'ioredis';
import { random, shuffled } from '../../prisma/random.js';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { countOf } from '../../src/counters/postCounters.js';
import { KINDS } from '../../src/domain/kinds.js';
import { FAV, LIKE, POST_RELATIONS, type PostRelationKind, type Relation } from '../../src/domain/relations.js';
import { createPersistedMarks } from '../../src/events/caughtUp.js';
import { createApi } from '../../src/process/api.js';
import { openParts, type Parts } from '../../src/process/parts.js';
import type { RedisClient } from '../../src/redis/client.js';
import { createKeys, type Keys } from '../../src/redis/keys.js';
import { waitFor } from '../../test/support/wait.js';

export const USERS = 1000;
export const VIEWER_ID = 1;
const [FEED_POSTS, LIKE_TARGET_POSTS] = [200, 20];

export const range = (first: number, n: number) => Array.from({ length: n }, (_, i) => first + i);
export const inGroups = <T>(items: readonly T[], size: number) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));
export async function inBatches<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>) {
  for (const group of inGroups(items, width)) await Promise.all(group.map(work));
}

/** A deployment's config, key names and a Redis connection, as its servers see them (they get this process's environment under theirs). */
export function deploymentRedis(serverEnv: Record<string, string>) {
  const config = loadConfig({ ...process.env, ...serverEnv });
  return { config, keys: createKeys(config.redisKeyPrefix, config.partitions), redis: new Redis(serverEnv.REDIS_URL!) };
}

export async function waitUntilPersisted(redis: RedisClient, keys: Keys): Promise<void> {
  const marks = createPersistedMarks(redis, keys);
  const mark = await marks.now();
  await waitFor(() => marks.passed(mark), Boolean, { timeoutMs: 300_000, intervalMs: 250, what: 'the fact persister' });
}

export async function withSeeder<T>(serverEnv: Record<string, string>, work: (seeder: Seeder) => Promise<T>): Promise<T> {
  const connections = openParts(loadConfig(serverEnv), { name: 'bench-seed' });
  const api = createApi(connections, { operator: true });
  try {
    await connections.checkDeployment();
    return await work(seederOf(connections, api));
  } finally {
    api.stop();
    await connections.close();
  }
}

type Seeder = ReturnType<typeof seederOf>;
function seederOf({ db }: Parts, { deps }: ReturnType<typeof createApi>) {
  return {
    deps,
    commands: deps.commands,
    db,
    addUsers: (ids: readonly number[], name: string) =>
      db.$executeRaw`INSERT INTO users (id, name) SELECT id, ${name} || ' ' || id FROM unnest(${ids}::bigint[]) AS id`,
    post: (authorId: number, title: string) => deps.commands.posts.create(authorId, { title, body: `Body of ${title}.` }),
    /** A like, a fav, or any relation of the registry (a reaction: `KINDS.reaction('HEART')!`). */
    like: (userId: number, postId: number, kind: PostRelationKind | Relation = 'LIKE') =>
      deps.commands.relations.setOnPost(userId, { postId, relation: typeof kind === 'string' ? POST_RELATIONS[kind] : kind, active: true }),
    async tokens(ids: readonly number[]) {
      const tokens = new Map<number, string>();
      await inBatches(ids, 100, async (id) => tokens.set(id, await deps.auth.sign(id)));
      return tokens;
    },
  };
}

export type World = Awaited<ReturnType<typeof seedWorld>>;

const CONTENTS = KINDS.reactions.map((kind) => kind.reaction!.content);

/** Counts in `contents` order, the viewer's contents, and the groups the API shows. */
export function reactionGroups(contents: readonly string[], reactions: readonly { userId: number; content: string }[], viewer: number) {
  const counts = contents.map((content) => reactions.filter((r) => r.content === content).length);
  const mine = reactions.filter((r) => r.userId === viewer).map((r) => r.content);
  const groups = contents.map((content, k) => ({ content, count: counts[k]!, viewerHasReacted: mine.includes(content) }));
  return { counts, mine, groups: groups.filter((g) => g.count > 0) };
}

export async function seedWorld(serverEnv: Record<string, string>) {
  const app = createApp(loadConfig({ ...serverEnv, ROLE: 'worker' }));
  await app.start();
  return withSeeder(serverEnv, async (seeder) => {
    const rand = random(2026);
    const userIds = range(1, USERS);
    await seeder.addUsers(userIds, 'User');
    const createPost = (title: string) => seeder.post(userIds[Math.floor(rand() * USERS)]!, title);
    const likeTargets = [];
    for (let i = 0; i < LIKE_TARGET_POSTS; i++) likeTargets.push(await createPost(`like target ${i}`));
    const warmup = await createPost('like warm-up');
    const feed = [];
    for (let i = 0; i < FEED_POSTS; i++) feed.push(await createPost(`feed post ${i}`));
    // A long tail: the post of popularity rank r has ~800/(r+1) likes; ranks shuffled over the feed.
    const ranks = shuffled(range(0, FEED_POSTS), rand);
    const others = userIds.filter((id) => id !== VIEWER_ID);
    const writes: { userId: number; postId: number; kind: PostRelationKind | Relation }[] = [];
    const expected = new Map<number, { likes: number; favs: number; liked: boolean; faved: boolean }>();
    // A third of each post's likers also react, each with one kind drawn at random; the viewer holds some kinds (another seed: the likes stay as they were).
    const [reactions, react] = [new Map<number, ReturnType<typeof reactionGroups>>(), random(8)];
    feed.forEach((post, i) => {
      const likers = shuffled(others, rand).slice(0, Math.floor(800 / (ranks[i]! + 1)));
      const favers = likers.slice(0, Math.floor(likers.length / 4));
      const reacts = likers
        .slice(0, Math.floor(likers.length / 3))
        .map((userId) => ({ userId, postId: post.id, kind: KINDS.reactions[Math.floor(react() * 8)]! }));
      reacts.push(...KINDS.reactions.filter(() => react() < 0.15).map((kind) => ({ userId: VIEWER_ID, postId: post.id, kind })));
      const contents = reacts.map(({ userId, kind }) => ({ userId, content: kind.reaction!.content }));
      reactions.set(post.id, reactionGroups(CONTENTS, contents, VIEWER_ID));
      writes.push(...reacts);
      const [liked, faved] = [rand() < 1 / 3, rand() < 1 / 5];
      if (liked) likers.push(VIEWER_ID);
      if (faved) favers.push(VIEWER_ID);
      for (const userId of likers) writes.push({ userId, postId: post.id, kind: 'LIKE' });
      for (const userId of favers) writes.push({ userId, postId: post.id, kind: 'FAV' });
      expected.set(post.id, { likes: likers.length, favs: favers.length, liked, faved });
    });
    for (const post of [...likeTargets, warmup]) expected.set(post.id, { likes: 0, favs: 0, liked: false, faved: false });
    await inBatches(writes, 500, (w) => seeder.like(w.userId, w.postId, w.kind));
    const ids = [...expected.keys()];
    const folded = async () => {
      await app.workers!.flusher.foldPartitions(range(0, app.config.partitions));
      const counts = await seeder.deps.postCounters.load(ids);
      const e = (i: number) => expected.get(ids[i]!)!;
      const reacted = (i: number) => reactions.get(ids[i]!)?.counts ?? KINDS.reactions.map(() => 0);
      const same = (i: number) => KINDS.reactions.every((kind, k) => countOf(counts[i]!, kind) === reacted(i)[k]);
      return counts.every((c, i) => c && countOf(c, LIKE) === e(i).likes && countOf(c, FAV) === e(i).favs && same(i));
    };
    await waitFor(folded, Boolean, { timeoutMs: 60_000, intervalMs: 200, what: 'the seeded likes in the counters' });
    await waitUntilPersisted(app.redis, app.keys); // the prisma-count baseline copies its rows from PostgreSQL's facts
    const tokens = await seeder.tokens(userIds);
    return { userIds, tokens, likeTargetIds: likeTargets.map((p) => p.id), warmupPostId: warmup.id, expected, reactions };
  }).finally(() => app.stop());
}
