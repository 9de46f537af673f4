// The account-erasure scenario's checks, read as a client and an operator would: counts served
// through GraphQL against a recount in PostgreSQL, and what is left of the victim
// (docs/performance.md, "Account erasure").
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Keys } from '../../src/redis/keys.js';
import { gql } from '../lib/load.js';
import { inBatches } from '../lib/seed.js';
import { VICTIM } from './erasureSeed.js';

const POSTS_QUERY = 'query($ids: [ID!]!) { posts(ids: $ids) { counts { likes favs } } }';
const USER_QUERY = 'query($id: ID!) { user(id: $id) { counts { followers followings likesReceived } } }';
const RECOUNT_POSTS = `SELECT u.id::int, count(*) FILTER (WHERE f.kind = 'like')::int AS likes, count(*) FILTER (WHERE f.kind = 'fav')::int AS favs
  FROM unnest($1::bigint[]) AS u(id) LEFT JOIN relation_facts f ON f.entity_type = 'post' AND f.entity_id = u.id AND f.active GROUP BY u.id`;
// Likes received: the likes on the user's live posts.
const RECOUNT_USERS = `SELECT u.id::int,
  (SELECT count(*)::int FROM relation_facts f WHERE f.entity_type = 'user' AND f.entity_id = u.id AND f.kind = 'follow' AND f.active) AS followers,
  (SELECT count(*)::int FROM relation_facts f WHERE f.user_id = u.id AND f.entity_type = 'user' AND f.kind = 'follow' AND f.active) AS followings,
  (SELECT count(*)::int FROM relation_facts f JOIN posts p ON p.id = f.entity_id AND p.deleted_at IS NULL
     WHERE f.entity_type = 'post' AND f.kind = 'like' AND f.active AND p.author_id = u.id) AS "likesReceived"
  FROM unnest($1::bigint[]) AS u(id)`;
const PAGE = 100;

type Counts = Record<string, number> | null | undefined;
type Mismatch = { id: number; field: string; served: number | null; recounted: number };

/** Served counts against the recount, `PAGE` ids at a time (four pages at once). */
async function compare(db: pg.Pool, recount: string, ids: number[], serve: (page: number[]) => Promise<Counts[]>) {
  const mismatches: Mismatch[] = [];
  const pages = Array.from({ length: Math.ceil(ids.length / PAGE) }, (_, i) => ids.slice(i * PAGE, (i + 1) * PAGE));
  await inBatches(pages, 4, async (page) => {
    const [served, { rows }] = await Promise.all([serve(page), db.query<{ id: number } & Record<string, number>>(recount, [page])]);
    for (const { id, ...expected } of rows) {
      const got = served[page.indexOf(id)];
      for (const [field, n] of Object.entries(expected))
        if (got?.[field] !== n) mismatches.push({ id, field, served: got?.[field] ?? null, recounted: n });
    }
  });
  return mismatches;
}

/** Every post's and user's counts against the recount; what differs is compared again for up to `retryMs` (a count may lag by a flush). */
export async function checkCounts(url: string, db: pg.Pool, postIds: number[], userIds: number[], retryMs = 10_000) {
  const servePosts = async (page: number[]) =>
    (await gql(url, POSTS_QUERY, { ids: page.map(String) })).data.posts.map((p: any) => p?.counts);
  const serveUser = async (id: number) => (await gql(url, USER_QUERY, { id: String(id) })).data.user?.counts;
  const posts = (ids: number[]) => compare(db, RECOUNT_POSTS, ids, servePosts);
  const users = (ids: number[]) => compare(db, RECOUNT_USERS, ids, (page) => Promise.all(page.map(serveUser)));
  let [p, u] = [await posts(postIds), await users(userIds)];
  const again = (m: Mismatch[]) => [...new Set(m.map((x) => x.id))];
  for (const deadline = Date.now() + retryMs; p.length + u.length > 0 && Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 1000));
    [p, u] = [await posts(again(p)), await users(again(u))];
  }
  return { posts: { compared: postIds.length, mismatches: p }, users: { compared: userIds.length, mismatches: u } };
}

/** Rows of the victim left in PostgreSQL by table, cached counter keys left in Redis, and the erasure's state. */
export async function victimLeft(db: pg.Pool, redis: Redis, keys: Keys) {
  const { rows } = await db.query(
    `SELECT (SELECT count(*)::int FROM users WHERE id = $1) AS users,
            (SELECT count(*)::int FROM user_counters WHERE user_id = $1) AS user_counters,
            (SELECT count(*)::int FROM relation_facts WHERE user_id = $1) AS facts_by,
            (SELECT count(*)::int FROM relation_facts WHERE entity_type = 'user' AND entity_id = $1) AS facts_about,
            (SELECT count(*)::int FROM posts WHERE author_id = $1) AS posts,
            (SELECT state FROM erasures WHERE user_id = $1) AS state`,
    [VICTIM],
  );
  const { state, ...left } = rows[0] as Record<string, number> & { state: string | null };
  return { rows: left, redisKeys: await redis.exists(keys.userCounters(VICTIM), keys.userCountersVersion(VICTIM)), state };
}
