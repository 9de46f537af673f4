// The SQL an account erasure runs, each statement bounded by `limit` rows, so erasing a
// heavy user is many small transactions that never hold locks for long.
import { ZERO_USER_COUNTERS } from '../domain/counters.js';
import { POST, USER } from '../domain/entities.js';
import { FOLLOW, NO_OWNER } from '../domain/relations.js';
import type { Db } from './client.js';
import { Prisma } from './generated/client.js';
import { addUserCounts, type UserCountRow } from './userCounters.js';

/** One of the user's own active facts, with whose counters it moves (the post's author, the followed user). */
export interface OwnFact {
  entityType: string;
  entityId: number;
  kind: string;
  /** The entity's owner (NO_OWNER: an unowned type's entity). */
  ownerId: number;
  /** A post whose row is gone: its facts move no one's counters and are only deleted. */
  gone: boolean;
}

/** Keyset position in (entity_type, entity_id, kind) order. */
export type OwnFactCursor = [entityType: string, entityId: number, kind: string];
const START: OwnFactCursor = ['', 0, ''];

/**
 * The user's facts (`f`) after a keyset position, as a condition that starts the primary key's
 * index scan right at that position: with `user_id = X` beside it instead of `user_id <= X`,
 * PostgreSQL starts at X's first fact and steps over every fact (and dead row) before the
 * position, so a heavy user's batches got slower and slower (measured: 4 ms per batch of 200
 * after 60,000, and a seq scan when the planner judged the user common).
 */
const afterInPrimaryKey = (userId: number, type: string, id: number, kind: string) =>
  Prisma.sql`(f.user_id, f.entity_type, f.entity_id, f.kind) > (${userId}::bigint, ${type}, ${id}::bigint, ${kind}) AND f.user_id <= ${userId}`;

export function createErasureQueries(db: Db) {
  return {
    /** Soft-deletes up to `limit` of the user's live posts and uncounts them; how many, and the new counter rows. */
    async deletePosts(userId: number, limit: number): Promise<{ deleted: number; counters: UserCountRow[] }> {
      return db.$transaction(async (tx) => {
        const rows = await tx.$queryRaw<{ id: bigint }[]>`
          UPDATE posts SET deleted_at = now()
          WHERE id IN (SELECT id FROM posts WHERE author_id = ${userId} AND deleted_at IS NULL ORDER BY id LIMIT ${limit})
          RETURNING id`;
        if (rows.length === 0) return { deleted: 0, counters: [] };
        const counters = await addUserCounts(tx, new Map([[userId, { ...ZERO_USER_COUNTERS, posts: -rows.length }]]));
        return { deleted: rows.length, counters };
      });
    },

    /** The user's own active facts after `after`, with each one's owner. */
    async ownFacts(userId: number, after: OwnFactCursor | null, limit: number): Promise<OwnFact[]> {
      const [type, id, kind] = after ?? START;
      const rows = await db.$queryRaw<{ entity_type: string; entity_id: bigint; kind: string; owner_id: bigint | null; gone: boolean }[]>`
        SELECT f.entity_type, f.entity_id, f.kind,
               CASE WHEN f.entity_type = ${USER} THEN f.entity_id WHEN f.entity_type = ${POST} THEN p.author_id ELSE e.owner_id END AS owner_id,
               (f.entity_type = ${POST} AND p.id IS NULL) AS gone
        FROM relation_facts f
        LEFT JOIN posts p ON f.entity_type = ${POST} AND p.id = f.entity_id
        LEFT JOIN entities e ON f.entity_type NOT IN (${POST}, ${USER}) AND e.id = f.entity_id
        WHERE ${afterInPrimaryKey(userId, type, id, kind)} AND f.active
        ORDER BY f.user_id, f.entity_type, f.entity_id, f.kind
        LIMIT ${limit}`;
      return rows.map((r) => ({
        entityType: r.entity_type,
        entityId: Number(r.entity_id),
        kind: r.kind,
        ownerId: Number(r.owner_id ?? NO_OWNER),
        gone: r.gone,
      }));
    },

    /** Users following `userId` (active), after `afterUserId`, in id order. */
    async followers(userId: number, afterUserId: number, limit: number): Promise<number[]> {
      const rows = await db.$queryRaw<{ user_id: bigint }[]>`
        SELECT user_id FROM relation_facts
        WHERE entity_type = ${USER} AND entity_id = ${userId} AND kind = ${FOLLOW.name} AND active AND user_id > ${afterUserId}
        ORDER BY user_id LIMIT ${limit}`;
      return rows.map((r) => Number(r.user_id));
    },

    /** What an erasure of the user still has to do: live posts, own active facts by relation, followers. */
    async remaining(userId: number): Promise<{ posts: number; facts: Record<string, number>; followers: number }> {
      const [posts, facts, followers] = await Promise.all([
        db.post.count({ where: { authorId: userId, deletedAt: null } }),
        // Facts on posts whose row is gone move no counters and are not undone, only deleted.
        db.$queryRaw<{ kind: string; n: bigint }[]>`
          SELECT f.kind, count(*) AS n FROM relation_facts f
          LEFT JOIN posts p ON f.entity_type = ${POST} AND p.id = f.entity_id
          WHERE f.user_id = ${userId} AND f.active AND (f.entity_type <> ${POST} OR p.id IS NOT NULL)
          GROUP BY f.kind`,
        db.relationFact.count({ where: { entityType: USER, entityId: userId, kind: FOLLOW.name, active: true } }),
      ]);
      return { posts, facts: Object.fromEntries(facts.map((f) => [f.kind, Number(f.n)])), followers };
    },

    /**
     * Deletes up to `limit` of the user's remaining rows, in the order foreign keys allow:
     * their facts (after `after`, in key order, so no batch walks the ones deleted before it),
     * the facts about them (follows of them), their posts; then, once none is left, their
     * counters and their user row (`last`: nothing of theirs is left). `after` is where the
     * next call goes on (null: from the start).
     */
    async deleteRows(
      userId: number,
      limit: number,
      after: OwnFactCursor | null,
    ): Promise<{ deleted: number; last: boolean; after: OwnFactCursor | null }> {
      const [type, id, kind] = after ?? START;
      const [own] = await db.$queryRaw<{ deleted: number; entity_type: string; entity_id: bigint; kind: string }[]>`
        WITH doomed AS (
          SELECT f.entity_type, f.entity_id, f.kind FROM relation_facts f
          WHERE ${afterInPrimaryKey(userId, type, id, kind)}
          ORDER BY f.user_id, f.entity_type, f.entity_id, f.kind
          LIMIT ${limit}
        ), gone AS (
          DELETE FROM relation_facts f USING doomed d
          WHERE f.user_id = ${userId} AND f.entity_type = d.entity_type AND f.entity_id = d.entity_id AND f.kind = d.kind
          RETURNING 1
        )
        SELECT (SELECT count(*) FROM gone)::int AS deleted, entity_type, entity_id, kind
        FROM doomed ORDER BY entity_type DESC, entity_id DESC, kind DESC LIMIT 1`;
      if (own) return { deleted: own.deleted, last: false, after: [own.entity_type, Number(own.entity_id), own.kind] };
      // Past the last one: once more from the start, in case one sorted before the position.
      if (after) return { deleted: 0, last: false, after: null };
      const steps = [
        () => db.$executeRaw`DELETE FROM relation_facts WHERE ctid IN (
          SELECT ctid FROM relation_facts WHERE entity_type = ${USER} AND entity_id = ${userId} LIMIT ${limit})`,
        () => db.$executeRaw`DELETE FROM posts WHERE id IN (SELECT id FROM posts WHERE author_id = ${userId} LIMIT ${limit})`,
      ];
      for (const step of steps) {
        const deleted = await step();
        if (deleted > 0) return { deleted, last: false, after: null };
      }
      const [counters, users] = await db.$transaction([
        db.$executeRaw`DELETE FROM user_counters WHERE user_id = ${userId}`,
        db.$executeRaw`DELETE FROM users WHERE id = ${userId}`,
      ]);
      return { deleted: counters + users, last: true, after: null };
    },
  };
}

export type ErasureQueries = ReturnType<typeof createErasureQueries>;
