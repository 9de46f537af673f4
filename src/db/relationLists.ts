// The lists people browse, read from the durable relation facts (so they follow the facts
// within the fact persister's lag): newest first, keyset-paged on (updated_at, id) along the
// relation_facts indexes — no OFFSET, no COUNT(*).
import type { Db } from './client.js';

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

function after(position: ListPosition | null, idField: 'userId' | 'entityId') {
  if (!position) return {};
  return {
    // The redundant bound becomes the index condition; the OR only trims ties.
    updatedAt: { lte: position.at },
    OR: [{ updatedAt: { lt: position.at } }, { updatedAt: position.at, [idField]: { lt: position.id } }],
  };
}

export function createRelationLists(db: Db) {
  return {
    /** Users with an active `kind` fact on the entity (likers of a post, followers of a user). */
    async usersOf(entityType: string, entityId: number, kind: string, limit: number, from: ListPosition | null): Promise<ListRow[]> {
      const rows = await db.relationFact.findMany({
        where: { entityType, entityId, kind, active: true, ...after(from, 'userId') },
        orderBy: [{ updatedAt: 'desc' }, { userId: 'desc' }],
        take: limit,
        select: { userId: true, updatedAt: true },
      });
      return rows.map((r) => ({ id: Number(r.userId), at: r.updatedAt }));
    },

    /** Entities the user has an active `kind` fact on (posts liked, users followed). */
    async entitiesOf(userId: number, kind: string, limit: number, from: ListPosition | null): Promise<ListRow[]> {
      const rows = await db.relationFact.findMany({
        where: { userId, kind, active: true, ...after(from, 'entityId') },
        orderBy: [{ updatedAt: 'desc' }, { entityId: 'desc' }],
        take: limit,
        select: { entityId: true, updatedAt: true },
      });
      return rows.map((r) => ({ id: Number(r.entityId), at: r.updatedAt }));
    },
  };
}

export type RelationLists = ReturnType<typeof createRelationLists>;
