// The lists people browse, read from the durable relation facts (so they follow the facts
// within the fact persister's lag): newest first, keyset-paged on (updated_at, id) along the
// relation_facts indexes — no OFFSET, no COUNT(*).
//
// What a viewer may not see (a private liker, a deleted post) is left out in the query
// itself, so a page and its cursors are made of visible rows only: nothing on a page, not
// its length, its end or its cursor, depends on a row the viewer may not see. A user whose
// erasure started is on no list from that moment (their facts are undone in the background).

import { type EntityType, POST, USER } from '../domain/entities.js';
import type { Db } from './client.js';
import { Prisma } from './generated/client.js';

/** A position in a list: the fact's time and the id of the other side. */
export interface ListPosition {
  at: Date;
  id: number;
}

export interface ListRow {
  /** The other side: the user on an entity's list, the entity on a user's list. */
  id: number;
  at: Date;
}

interface RawRow {
  id: bigint;
  at: Date;
}

/** Leaves out users whose erasure started (the erasure list, src/db/erasures.ts). */
const notErased = (userColumn: Prisma.Sql) => Prisma.sql`AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.user_id = ${userColumn})`;

const toRows = (rows: RawRow[]): ListRow[] => rows.map((r) => ({ id: Number(r.id), at: r.at }));

/** Rows strictly after `from` in (updated_at DESC, id DESC) order: an index condition on both. */
const after = (from: ListPosition | null, idColumn: Prisma.Sql) =>
  from ? Prisma.sql`AND (f.updated_at, ${idColumn}) < (${from.at}::timestamptz, ${from.id}::bigint)` : Prisma.empty;

export function createRelationLists(db: Db) {
  return {
    /**
     * Users with an active `kind` fact on the entity (followers of a user). With `privateExceptFor`
     * (likers of a post), users whose likes are private are left out, except that viewer.
     */
    async usersOf(
      entityType: string,
      entityId: number,
      kind: string,
      limit: number,
      from: ListPosition | null,
      visibility: { privateExceptFor: number | null } | null = null,
    ): Promise<ListRow[]> {
      const visible = visibility
        ? Prisma.sql`AND (u.likes_public OR f.user_id = ${visibility.privateExceptFor ?? 0}::bigint)`
        : Prisma.empty;
      return toRows(
        await db.$queryRaw<RawRow[]>`
        SELECT f.user_id AS id, f.updated_at AS at
        FROM relation_facts f JOIN users u ON u.id = f.user_id
        WHERE f.entity_type = ${entityType} AND f.entity_id = ${entityId}::bigint AND f.kind = ${kind} AND f.active
          ${visible} ${notErased(Prisma.sql`f.user_id`)} ${after(from, Prisma.sql`f.user_id`)}
        ORDER BY f.updated_at DESC, f.user_id DESC
        LIMIT ${limit}`,
      );
    },

    /**
     * Entities of `entityType` the user has an active `kind` fact on that still exist: users
     * followed, posts liked, favourited or bookmarked, entities a product owns bookmarked
     * (deleted ones are left out).
     */
    async entitiesOf(userId: number, entityType: EntityType, kind: string, limit: number, from: ListPosition | null): Promise<ListRow[]> {
      const existing =
        entityType === POST
          ? Prisma.sql`JOIN posts e ON e.id = f.entity_id AND e.deleted_at IS NULL`
          : entityType === USER
            ? Prisma.sql`JOIN users e ON e.id = f.entity_id`
            : Prisma.sql`JOIN entities e ON e.id = f.entity_id AND e.deleted_at IS NULL`;
      return toRows(
        await db.$queryRaw<RawRow[]>`
        SELECT f.entity_id AS id, f.updated_at AS at
        FROM relation_facts f ${existing}
        WHERE f.user_id = ${userId}::bigint AND f.entity_type = ${entityType} AND f.kind = ${kind} AND f.active
          ${entityType === USER ? notErased(Prisma.sql`f.entity_id`) : Prisma.empty} ${after(from, Prisma.sql`f.entity_id`)}
        ORDER BY f.updated_at DESC, f.entity_id DESC
        LIMIT ${limit}`,
      );
    },
  };
}

export type RelationLists = ReturnType<typeof createRelationLists>;
