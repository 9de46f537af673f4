// Users' counters in PostgreSQL: changed by deltas inside the transactions that change what
// they count, and recomputable from the base tables (relation facts, posts) under a row lock.

import { type UserCounterValues, ZERO_USER_COUNTERS } from '../domain/counters.js';
import { POST, USER } from '../domain/entities.js';
import { KINDS, TYPES } from '../domain/kinds.js';
import type { Relation } from '../domain/relations.js';
import type { Db } from './client.js';

export interface UserCountRow extends UserCounterValues {
  userId: number;
  version: bigint;
}

/** A client or an interactive transaction. */
type Sql = Pick<Db, '$queryRaw'>;

interface RawRow {
  user_id: bigint;
  followings: number;
  followers: number;
  posts: number;
  likes_received: number;
  favs_received: number;
  version: bigint;
}

const toRow = (r: RawRow): UserCountRow => ({
  userId: Number(r.user_id),
  followings: r.followings,
  followers: r.followers,
  posts: r.posts,
  likesReceived: r.likes_received,
  favsReceived: r.favs_received,
  version: r.version,
});

/** Adds deltas (in user id order, so concurrent transactions cannot deadlock); returns the new rows. */
export async function addUserCounts(sql: Sql, deltas: Map<number, UserCounterValues>): Promise<UserCountRow[]> {
  const ids = [...deltas.keys()].sort((a, b) => a - b);
  if (ids.length === 0) return [];
  const column = (pick: (d: UserCounterValues) => number) => ids.map((id) => pick(deltas.get(id)!));
  const rows = await sql.$queryRaw<RawRow[]>`
    INSERT INTO user_counters (user_id, followings, followers, posts, likes_received, favs_received)
    SELECT * FROM unnest(
      ${ids.map(String)}::bigint[], ${column((d) => d.followings)}::int[], ${column((d) => d.followers)}::int[],
      ${column((d) => d.posts)}::int[], ${column((d) => d.likesReceived)}::int[], ${column((d) => d.favsReceived)}::int[]
    )
    ON CONFLICT (user_id) DO UPDATE SET
      followings = user_counters.followings + EXCLUDED.followings,
      followers = user_counters.followers + EXCLUDED.followers,
      posts = user_counters.posts + EXCLUDED.posts,
      likes_received = user_counters.likes_received + EXCLUDED.likes_received,
      favs_received = user_counters.favs_received + EXCLUDED.favs_received,
      version = user_counters.version + 1,
      updated_at = now()
    RETURNING user_id, followings, followers, posts, likes_received, favs_received, version`;
  return rows.map(toRow);
}

/** The counts as the base tables say now (what the stored counters must equal). */
async function fromBaseTables(sql: Sql, userIds: readonly number[]): Promise<Map<number, UserCounterValues>> {
  // Which kinds move which counter is the registry's; this counts each user's facts per kind,
  // as the one who set them and as the owner of what they are set on. Kinds on posts are
  // counted post by post through the facts' entity index: a join of all the author's posts
  // with relation_facts made PostgreSQL scan the whole facts table once per author (150 ms and
  // more per user at a million facts).
  const names = (kinds: readonly Relation[]) => kinds.map((kind) => kind.name);
  const rows = await sql.$queryRaw<{ user_id: bigint; role: 'setter' | 'owner' | 'posts'; kind: string; n: number }[]>`
    SELECT u.id AS user_id, c.role, c.kind, c.n
    FROM unnest(${[...new Set(userIds)].map(String)}::bigint[]) AS u(id)
    CROSS JOIN LATERAL (
      SELECT 'setter' AS role, f.kind, count(*)::int AS n FROM relation_facts f
        WHERE f.user_id = u.id AND f.kind = ANY(${names(KINDS.all.filter((k) => k.setterCounter))}::text[]) AND f.active
        GROUP BY f.kind
      UNION ALL
      SELECT 'owner', f.kind, count(*)::int FROM relation_facts f
        WHERE f.entity_type = ${USER} AND f.entity_id = u.id
          AND f.kind = ANY(${names(TYPES.kindsOf(USER).filter((k) => k.ownerCounter))}::text[]) AND f.active
        GROUP BY f.kind
      UNION ALL
      SELECT 'owner', per_post.kind, sum(per_post.n)::int
        FROM posts p CROSS JOIN LATERAL (
          SELECT f.kind, count(*) AS n FROM relation_facts f
          WHERE f.entity_type = ${POST} AND f.entity_id = p.id
            AND f.kind = ANY(${names(TYPES.kindsOf(POST).filter((k) => k.ownerCounter))}::text[]) AND f.active
          GROUP BY f.kind) per_post
        WHERE p.author_id = u.id
        GROUP BY per_post.kind
      UNION ALL
      SELECT 'posts', '', count(*)::int FROM posts p WHERE p.author_id = u.id AND p.deleted_at IS NULL
    ) c`;
  const counts = new Map(userIds.map((id) => [id, { ...ZERO_USER_COUNTERS }]));
  for (const row of rows) {
    const values = counts.get(Number(row.user_id))!;
    if (row.role === 'posts') {
      values.posts = row.n;
      continue;
    }
    const kind = KINDS.named(row.kind);
    const counter = row.role === 'setter' ? kind?.setterCounter : kind?.ownerCounter;
    if (counter) values[counter] += row.n;
  }
  return counts;
}

/** Users one snapshot transaction compares: each transaction stays short whoever they are. */
const SNAPSHOT_USERS = 50;
/** A snapshot of SNAPSHOT_USERS prolific authors counts millions of facts; Prisma's default is 5 s. */
const SNAPSHOT_TIMEOUT_MS = 60_000;

export function createUserCounterStore(db: Db) {
  return {
    async byIds(userIds: readonly number[]): Promise<UserCountRow[]> {
      const rows = await db.$queryRaw<RawRow[]>`
        SELECT user_id, followings, followers, posts, likes_received, favs_received, version
        FROM user_counters WHERE user_id = ANY(${userIds.map(String)}::bigint[])`;
      return rows.map(toRow);
    },

    fromBaseTables: (userIds: readonly number[]) => fromBaseTables(db, userIds),

    /**
     * The stored counters and the base tables' counts, from one snapshot: the transactions
     * that change them change both at once, so any difference here is real drift.
     */
    async snapshot(userIds: readonly number[]): Promise<{ stored: UserCountRow[]; actual: Map<number, UserCounterValues> }> {
      const stored: UserCountRow[] = [];
      const actual = new Map<number, UserCounterValues>();
      // One snapshot per slice of users: a user's row and counts are compared within one.
      for (let i = 0; i < userIds.length; i += SNAPSHOT_USERS) {
        const slice = userIds.slice(i, i + SNAPSHOT_USERS);
        await db.$transaction(
          async (tx) => {
            const rows = await tx.$queryRaw<RawRow[]>`
              SELECT user_id, followings, followers, posts, likes_received, favs_received, version
              FROM user_counters WHERE user_id = ANY(${slice.map(String)}::bigint[])`;
            stored.push(...rows.map(toRow));
            for (const [id, values] of await fromBaseTables(tx, slice)) actual.set(id, values);
          },
          { isolationLevel: 'RepeatableRead', timeout: SNAPSHOT_TIMEOUT_MS },
        );
      }
      return { stored, actual };
    },

    /** Up to `n` user ids picked at random (the next id after random points: index lookups only). */
    async randomUserIds(n: number): Promise<number[]> {
      const [range] = await db.$queryRaw<{ low: bigint | null; high: bigint | null }[]>`SELECT min(id) AS low, max(id) AS high FROM users`;
      if (!range?.low || !range.high) return [];
      const [low, high] = [Number(range.low), Number(range.high)];
      const points = Array.from({ length: n }, () => String(low + Math.floor(Math.random() * (high - low + 1))));
      const rows = await db.$queryRaw<{ id: bigint }[]>`
        SELECT DISTINCT u.id FROM unnest(${points}::bigint[]) AS r(v)
        CROSS JOIN LATERAL (SELECT id FROM users WHERE id >= r.v ORDER BY id LIMIT 1) AS u`;
      return rows.map((r) => Number(r.id));
    },

    /** Every row, a page at a time in user order (recovery refills the cache from these). */
    async page(afterUserId: number, limit: number): Promise<UserCountRow[]> {
      const rows = await db.$queryRaw<RawRow[]>`
        SELECT user_id, followings, followers, posts, likes_received, favs_received, version
        FROM user_counters WHERE user_id > ${afterUserId} ORDER BY user_id LIMIT ${limit}`;
      return rows.map(toRow);
    },

    /**
     * Recomputes one user's counters from the base tables. The row lock makes transactions
     * that add deltas for this user wait, so none is lost or counted twice.
     */
    async recompute(userId: number): Promise<UserCountRow> {
      return db.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO user_counters (user_id) VALUES (${userId}) ON CONFLICT DO NOTHING`;
        await tx.$queryRaw`SELECT 1 FROM user_counters WHERE user_id = ${userId} FOR UPDATE`;
        const counts = (await fromBaseTables(tx, [userId])).get(userId) ?? ZERO_USER_COUNTERS;
        const [row] = await tx.$queryRaw<RawRow[]>`
          UPDATE user_counters SET followings = ${counts.followings}, followers = ${counts.followers}, posts = ${counts.posts},
            likes_received = ${counts.likesReceived}, favs_received = ${counts.favsReceived}, version = version + 1, updated_at = now()
          WHERE user_id = ${userId}
          RETURNING user_id, followings, followers, posts, likes_received, favs_received, version`;
        return toRow(row!);
      });
    },
  };
}

export type UserCounterStore = ReturnType<typeof createUserCounterStore>;
