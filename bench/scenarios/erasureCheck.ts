// What the account-erasure scenario checks before and after the erasure, read the way a
// client and an operator would: post counts through GraphQL `posts(ids)` (100 at a time) and
// user counts through `user(id)`, each equal to a recount of the active facts PostgreSQL
// holds; after it, nothing of the victim left (rows, cached counters) and the erasure DONE.
import type { Redis } from 'ioredis';
import type pg from 'pg';
import type { Keys } from '../../src/redis/keys.js';
import { gql } from '../lib/load.js';
import { VICTIM } from './erasureSeed.js';

const POSTS_QUERY = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs } } }';
const USER_QUERY = 'query($id: ID!) { user(id: $id) { id counts { followers followings likesReceived } } }';
const PAGE = 100;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface CountCheck {
  /** Entities compared, and those whose count differed from the recount (after retries). */
  compared: number;
  mismatches: { id: number; field: string; served: number; recounted: number }[];
}

/** Active likes and favourites per post in PostgreSQL. */
async function recountPosts(db: pg.Pool, ids: readonly number[]): Promise<Map<number, { likes: number; favs: number }>> {
  const { rows } = await db.query<{ id: string; likes: string; favs: string }>(
    `SELECT entity_id AS id, count(*) FILTER (WHERE kind = 'like') AS likes, count(*) FILTER (WHERE kind = 'fav') AS favs
     FROM relation_facts WHERE entity_type = 'post' AND active AND entity_id = ANY($1::bigint[]) GROUP BY entity_id`,
    [ids],
  );
  return new Map(rows.map((r) => [Number(r.id), { likes: Number(r.likes), favs: Number(r.favs) }]));
}

async function comparePosts(url: string, db: pg.Pool, ids: readonly number[]): Promise<CountCheck['mismatches']> {
  const mismatches: CountCheck['mismatches'] = [];
  for (let i = 0; i < ids.length; i += PAGE * 4) {
    const pages = [];
    for (let j = i; j < Math.min(ids.length, i + PAGE * 4); j += PAGE) pages.push(ids.slice(j, j + PAGE));
    await Promise.all(
      pages.map(async (page) => {
        const [{ data }, recount] = await Promise.all([
          gql<{ posts: ({ id: string; counts: { likes: number; favs: number } } | null)[] }>(url, POSTS_QUERY, {
            ids: page.map(String),
          }),
          recountPosts(db, page),
        ]);
        page.forEach((id, k) => {
          const served = data.posts[k];
          const expected = recount.get(id) ?? { likes: 0, favs: 0 };
          if (!served) mismatches.push({ id, field: 'post missing', served: 0, recounted: 1 });
          else {
            if (served.counts.likes !== expected.likes)
              mismatches.push({ id, field: 'likes', served: served.counts.likes, recounted: expected.likes });
            if (served.counts.favs !== expected.favs)
              mismatches.push({ id, field: 'favs', served: served.counts.favs, recounted: expected.favs });
          }
        });
      }),
    );
  }
  return mismatches;
}

/** Followers, followings and likes received per user in PostgreSQL (likes on their live posts). */
async function recountUsers(db: pg.Pool, ids: readonly number[]) {
  const { rows } = await db.query<{ id: string; followers: string; followings: string; likes_received: string }>(
    `SELECT u.id,
       (SELECT count(*) FROM relation_facts f WHERE f.entity_type = 'user' AND f.entity_id = u.id AND f.kind = 'follow' AND f.active) AS followers,
       (SELECT count(*) FROM relation_facts f WHERE f.user_id = u.id AND f.entity_type = 'user' AND f.kind = 'follow' AND f.active) AS followings,
       (SELECT count(*) FROM relation_facts f JOIN posts p ON p.id = f.entity_id AND p.deleted_at IS NULL
          WHERE f.entity_type = 'post' AND f.kind = 'like' AND f.active AND p.author_id = u.id) AS likes_received
     FROM unnest($1::bigint[]) AS u(id)`,
    [ids],
  );
  return new Map(
    rows.map((r) => [
      Number(r.id),
      { followers: Number(r.followers), followings: Number(r.followings), likesReceived: Number(r.likes_received) },
    ]),
  );
}

async function compareUsers(url: string, db: pg.Pool, ids: readonly number[]): Promise<CountCheck['mismatches']> {
  const recount = await recountUsers(db, ids);
  const mismatches: CountCheck['mismatches'] = [];
  await Promise.all(
    ids.map(async (id) => {
      const { data } = await gql<{ user: { counts: Record<string, number> } | null }>(url, USER_QUERY, { id: String(id) });
      const expected = recount.get(id)!;
      for (const field of ['followers', 'followings', 'likesReceived'] as const) {
        const served = data.user?.counts[field] ?? Number.NaN;
        if (served !== expected[field]) mismatches.push({ id, field, served, recounted: expected[field] });
      }
    }),
  );
  return mismatches;
}

/**
 * Served counts against the recount; what differs is compared again for up to `retryMs` (a
 * count includes a change within the flush interval, so a mismatch must persist to count).
 */
export async function checkCounts(
  url: string,
  db: pg.Pool,
  postIds: readonly number[],
  userIds: readonly number[],
  retryMs = 10_000,
): Promise<{ posts: CountCheck; users: CountCheck }> {
  let posts = await comparePosts(url, db, postIds);
  let users = await compareUsers(url, db, userIds);
  const deadline = Date.now() + retryMs;
  while ((posts.length > 0 || users.length > 0) && Date.now() < deadline) {
    await sleep(1000);
    posts = await comparePosts(url, db, [...new Set(posts.map((m) => m.id))]);
    users = await compareUsers(url, db, [...new Set(users.map((m) => m.id))]);
  }
  return { posts: { compared: postIds.length, mismatches: posts }, users: { compared: userIds.length, mismatches: users } };
}

export interface VictimLeft {
  /** Rows of the victim still in PostgreSQL, by table. */
  rows: Record<string, number>;
  /** The victim's cached counter keys still in Redis. */
  redisKeys: number;
  /** The erasure's state in the erasures table (null: no row). */
  state: string | null;
}

export async function victimLeft(db: pg.Pool, redis: Redis, keys: Keys): Promise<VictimLeft> {
  const { rows } = await db.query<Record<string, string>>(
    `SELECT (SELECT count(*) FROM users WHERE id = $1) AS users,
            (SELECT count(*) FROM user_counters WHERE user_id = $1) AS user_counters,
            (SELECT count(*) FROM relation_facts WHERE user_id = $1) AS facts_by,
            (SELECT count(*) FROM relation_facts WHERE entity_type = 'user' AND entity_id = $1) AS facts_about,
            (SELECT count(*) FROM posts WHERE author_id = $1) AS posts`,
    [VICTIM],
  );
  const state = await db.query<{ state: string }>('SELECT state FROM erasures WHERE user_id = $1', [VICTIM]);
  return {
    rows: Object.fromEntries(Object.entries(rows[0]!).map(([table, n]) => [table, Number(n)])),
    redisKeys: await redis.exists(keys.userCounters(VICTIM), keys.userCountersVersion(VICTIM)),
    state: state.rows[0]?.state ?? null,
  };
}
