// The account-erasure world through bench/lib/seed.ts, and its checks: counts against a recount, what is left of the victim.
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Keys } from '../../src/redis/keys.js';
import { gql } from '../lib/load.js';
import { inBatches, inGroups, range, withSeeder } from '../lib/seed.js';

export const VICTIM = 1;
export const LOAD_USERS = range(1001, 1000);
const [AUTHORS, FOLLOWERS] = [range(2, 100), range(3001, 20)];
const CHECKED_USERS = [...AUTHORS, ...FOLLOWERS];
const [SEED_WIDTH, PAGE] = [256, 100];
export type ErasureWorld = Awaited<ReturnType<typeof seedErasureWorld>>;

export async function seedErasureWorld(serverEnv: Record<string, string>, likes: number) {
  return withSeeder(serverEnv, async (seeder) => {
    await seeder.addUsers([VICTIM, ...AUTHORS, ...FOLLOWERS, ...LOAD_USERS], 'Bench user');
    // Oldest first, one a second up to now, so ids grow with time and the newest are the feed's first page.
    const inserted = await seeder.db.$queryRaw<{ id: bigint }[]>`INSERT INTO posts (author_id, title, body, created_at)
      SELECT ${AUTHORS[0]} + g % ${AUTHORS.length}, 'Bench post ' || g, 'Body of bench post ' || g || '.',
        now() - make_interval(secs => ${likes} - g)
      FROM generate_series(1, ${likes}) AS g ORDER BY g RETURNING id`;
    const likedPostIds = inserted.map((r) => Number(r.id)).sort((a, b) => a - b);
    await inBatches(AUTHORS, 10, (id) => seeder.deps.userCounters.rebuild(id)); // 10: Prisma's pool; more time out waiting
    await inBatches(likedPostIds, 1000, (id) => seeder.deps.postCounters.initialize(id));
    const victimPosts = await Promise.all(range(0, 5).map((i) => seeder.post(VICTIM, `Victim post ${i}`)));
    await inBatches(likedPostIds, SEED_WIDTH * 4, async (postId) => {
      if (!(await seeder.like(VICTIM, postId)).changed) throw new Error(`the victim's like of post ${postId} changed nothing`);
    });
    const favedPostIds = likedPostIds.filter((_, i) => i % 100 === 0);
    await inBatches(favedPostIds, SEED_WIDTH, (postId) => seeder.like(VICTIM, postId, 'FAV'));
    // Every 10th post is also liked by one author, so an exact count after the erasure is not simply 0.
    const otherLiked = likedPostIds.filter((_, i) => i % 10 === 0);
    await inBatches(otherLiked, SEED_WIDTH, (postId) => seeder.like(AUTHORS[(postId * 7) % AUTHORS.length]!, postId));
    const followees = AUTHORS.slice(0, 20);
    const follow = (userId: number, followeeId: number) => seeder.commands.relations.follow(userId, { followeeId, active: true });
    await Promise.all([...followees.map((followeeId) => follow(VICTIM, followeeId)), ...FOLLOWERS.map((userId) => follow(userId, VICTIM))]);
    await Promise.all(FOLLOWERS.flatMap((userId) => victimPosts.map((post) => seeder.like(userId, post.id))));
    const tokens = await seeder.tokens([VICTIM, ...LOAD_USERS]);
    const seed = { likes: likedPostIds.length, favs: favedPostIds.length, otherLikes: otherLiked.length };
    return { likedPostIds, tokens, seed: { ...seed, victimFacts: seed.likes + seed.favs + followees.length } };
  });
}

const POSTS_QUERY = 'query($ids: [ID!]!) { posts(ids: $ids) { counts { likes favs } } }';
const USER_QUERY = 'query($id: ID!) { user(id: $id) { counts { followers followings likesReceived } } }';
const RECOUNT_POSTS = `SELECT u.id::int, count(*) FILTER (WHERE f.kind = 'like')::int AS likes, count(*) FILTER (WHERE f.kind = 'fav')::int AS favs
  FROM unnest($1::bigint[]) AS u(id) LEFT JOIN relation_facts f ON f.entity_type = 'post' AND f.entity_id = u.id AND f.active GROUP BY u.id`;
const RECOUNT_USERS = `SELECT u.id::int,
  (SELECT count(*)::int FROM relation_facts f WHERE f.entity_type = 'user' AND f.entity_id = u.id AND f.kind = 'follow' AND f.active) AS followers,
  (SELECT count(*)::int FROM relation_facts f WHERE f.user_id = u.id AND f.entity_type = 'user' AND f.kind = 'follow' AND f.active) AS followings,
  (SELECT count(*)::int FROM relation_facts f JOIN posts p ON p.id = f.entity_id AND p.deleted_at IS NULL
     WHERE f.entity_type = 'post' AND f.kind = 'like' AND f.active AND p.author_id = u.id) AS "likesReceived"
  FROM unnest($1::bigint[]) AS u(id)`;
type Counts = Record<string, number> | null | undefined;

async function compare(db: pg.Pool, recount: string, ids: number[], serve: (page: number[]) => Promise<Counts[]>) {
  const mismatches: { id: number; field: string; served: number | null; recounted: number }[] = [];
  await inBatches(inGroups(ids, PAGE), 4, async (page) => {
    const [served, { rows }] = await Promise.all([serve(page), db.query(recount, [page])]);
    for (const { id, ...recounted } of rows as ({ id: number } & Record<string, number>)[]) {
      const got = served[page.indexOf(id)];
      for (const [field, n] of Object.entries(recounted))
        if (got?.[field] !== n) mismatches.push({ id, field, served: got?.[field] ?? null, recounted: n });
    }
  });
  return mismatches;
}

export async function checkCounts(url: string, db: pg.Pool, postIds: number[], retryMs = 10_000) {
  const servePosts = async (page: number[]) =>
    (await gql(url, POSTS_QUERY, { ids: page.map(String) })).data.posts.map((p: any) => p?.counts);
  const serveUser = async (id: number) => (await gql(url, USER_QUERY, { id: String(id) })).data.user?.counts;
  const posts = (ids: number[]) => compare(db, RECOUNT_POSTS, ids, servePosts);
  const users = (ids: number[]) => compare(db, RECOUNT_USERS, ids, (page) => Promise.all(page.map(serveUser)));
  let [p, u] = [await posts(postIds), await users(CHECKED_USERS)];
  const again = (m: { id: number }[]) => [...new Set(m.map((x) => x.id))];
  for (const deadline = Date.now() + retryMs; p.length + u.length > 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 1000));
    [p, u] = [await posts(again(p)), await users(again(u))];
  }
  return { posts: { compared: postIds.length, mismatches: p }, users: { compared: CHECKED_USERS.length, mismatches: u } };
}

export const countsExact = (c: Awaited<ReturnType<typeof checkCounts>>) => c.posts.mismatches.length + c.users.mismatches.length === 0;

export async function victimLeft(db: pg.Pool, redis: Redis, keys: Keys) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*)::int FROM users WHERE id = $1) AS users, (SELECT count(*)::int FROM user_counters WHERE user_id = $1) AS user_counters,
       (SELECT count(*)::int FROM relation_facts WHERE user_id = $1) AS facts_by,
       (SELECT count(*)::int FROM relation_facts WHERE entity_type = 'user' AND entity_id = $1) AS facts_about,
       (SELECT count(*)::int FROM posts WHERE author_id = $1) AS posts, (SELECT state FROM erasures WHERE user_id = $1) AS state`,
    [VICTIM],
  );
  const { state, ...left } = rows[0] as Record<string, number> & { state: string | null };
  return { rows: left, redisKeys: await redis.exists(keys.userCounters(VICTIM), keys.userCountersVersion(VICTIM)), state };
}
