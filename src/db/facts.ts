// Reads of the durable relation facts: what answers when Redis cannot be trusted (recovery)
// and what recovery itself copies back into Redis.
import type { Db } from './client.js';

export interface FactCounts {
  entityId: number;
  kind: string;
  count: number;
}

export interface FactRow {
  userId: number;
  entityType: string;
  entityId: number;
  kind: string;
}

/** Keyset position in primary-key order (user_id, entity_type, entity_id, kind). */
export type FactCursor = [userId: number, entityType: string, entityId: number, kind: string];
/** One active fact of a known entity, and where a page of them stopped (a user may hold several kinds). */
export interface EntityFactCursor {
  userId: number;
  kind: string;
}

export function createFactStore(db: Db) {
  return {
    async hasAny(): Promise<boolean> {
      return (await db.relationFact.findFirst({ where: { active: true }, select: { userId: true } })) !== null;
    },

    /** Active facts per (entity, kind) for the given entities: one query. */
    async counts(entityType: string, entityIds: readonly number[]): Promise<FactCounts[]> {
      const rows = await db.relationFact.groupBy({
        by: ['entityId', 'kind'],
        where: { entityType, entityId: { in: [...entityIds] }, active: true },
        _count: { _all: true },
      });
      return rows.map((r) => ({ entityId: Number(r.entityId), kind: r.kind, count: r._count._all }));
    },

    /** The kinds a user has active on each of the entities: one query. */
    async activeFor(userId: number, entityType: string, entityIds: readonly number[]) {
      const rows = await db.relationFact.findMany({
        where: { userId, entityType, entityId: { in: [...entityIds] }, active: true },
        select: { entityId: true, kind: true },
      });
      return rows.map((r) => ({ entityId: Number(r.entityId), kind: r.kind }));
    },

    /** A page of active facts after `cursor`, in primary-key order (for recovery). */
    async activePage(after: FactCursor | null, limit: number): Promise<FactRow[]> {
      const rows = await db.relationFact.findMany({
        where: {
          active: true,
          ...(after && {
            userId: { gte: after[0] }, // the index condition; the OR only trims ties
            OR: [
              { userId: { gt: after[0] } },
              { userId: after[0], entityType: { gt: after[1] } },
              { userId: after[0], entityType: after[1], entityId: { gt: after[2] } },
              { userId: after[0], entityType: after[1], entityId: after[2], kind: { gt: after[3] } },
            ],
          }),
        },
        orderBy: [{ userId: 'asc' }, { entityType: 'asc' }, { entityId: 'asc' }, { kind: 'asc' }],
        take: limit,
        select: { userId: true, entityType: true, entityId: true, kind: true },
      });
      return rows.map((r) => ({ userId: Number(r.userId), entityType: r.entityType, entityId: Number(r.entityId), kind: r.kind }));
    },

    /**
     * One entity's active facts (kind and user), a page at a time in (user, kind) order (to restore
     * it). Facts of users on the erasure list are left out: a restore never brings an erased
     * user back (one still being erased has their facts undone by the erasure either way).
     */
    async activeOf(entityType: string, entityId: number, after: EntityFactCursor | null, limit: number): Promise<EntityFactCursor[]> {
      const rows = await db.$queryRaw<{ user_id: bigint; kind: string }[]>`
        SELECT f.user_id, f.kind FROM relation_facts f
        WHERE f.entity_type = ${entityType} AND f.entity_id = ${entityId} AND f.active
          AND (f.user_id, f.kind) > (${after?.userId ?? 0}, ${after?.kind ?? ''})
          AND NOT EXISTS (SELECT 1 FROM erasures e WHERE e.user_id = f.user_id)
          AND NOT (f.entity_type = 'user' AND EXISTS (SELECT 1 FROM erasures e WHERE e.user_id = f.entity_id))
        ORDER BY f.user_id, f.kind
        LIMIT ${limit}`;
      return rows.map((r) => ({ userId: Number(r.user_id), kind: r.kind }));
    },

    /** Every entity that has facts or persisted views, a page at a time in id order (what a recovery restores). */
    async entityPage(entityType: string, afterId: number, limit: number): Promise<number[]> {
      const rows = await db.$queryRaw<{ entity_id: bigint }[]>`
        SELECT entity_id FROM relation_facts WHERE entity_type = ${entityType} AND entity_id > ${afterId}
        UNION SELECT entity_id FROM entity_views WHERE entity_type = ${entityType} AND entity_id > ${afterId}
        ORDER BY entity_id LIMIT ${limit}`;
      return rows.map((r) => Number(r.entity_id));
    },

    /** How many entities have facts or persisted views (what a recovery walks). */
    async entityTotal(): Promise<number> {
      const [row] = await db.$queryRaw<{ n: bigint }[]>`
        SELECT count(*) AS n FROM (
          SELECT entity_type, entity_id FROM relation_facts UNION SELECT entity_type, entity_id FROM entity_views
        ) e`;
      return Number(row?.n ?? 0);
    },

    async activeTotal(): Promise<number> {
      return db.relationFact.count({ where: { active: true } });
    },
  };
}

export type FactStore = ReturnType<typeof createFactStore>;
