// The entity_views table: each entity's views as last persisted from Redis
// (src/counters/viewSnapshots.ts), read back when Redis lost its data.
import type { Db } from './client.js';

export interface ViewSnapshot {
  entityType: string;
  entityId: number;
  total: number;
  viewers: number;
  /** The sketch of distinct viewers as Redis stored it (an exact digest list or a HyperLogLog). */
  sketch: Buffer;
  /** Redis's clock when the snapshot was taken. */
  snapshotMs: number;
}

export function createViewStore(db: Db) {
  return {
    /** Writes the snapshots; a row only moves to a newer snapshot (an older one arriving late changes nothing). */
    async save(rows: readonly ViewSnapshot[]): Promise<void> {
      if (rows.length === 0) return;
      await db.$executeRaw`
        INSERT INTO entity_views (entity_type, entity_id, total, viewers, sketch, snapshot_ms)
        SELECT entity_type, entity_id, total, viewers, decode(sketch, 'base64'), snapshot_ms FROM unnest(
          ${rows.map((r) => r.entityType)}::varchar[],
          ${rows.map((r) => String(r.entityId))}::bigint[],
          ${rows.map((r) => String(r.total))}::bigint[],
          ${rows.map((r) => String(r.viewers))}::bigint[],
          ${rows.map((r) => r.sketch.toString('base64'))}::text[],
          ${rows.map((r) => String(r.snapshotMs))}::bigint[]
        ) AS i(entity_type, entity_id, total, viewers, sketch, snapshot_ms)
        ON CONFLICT (entity_type, entity_id) DO UPDATE
          SET total = EXCLUDED.total, viewers = EXCLUDED.viewers, sketch = EXCLUDED.sketch, snapshot_ms = EXCLUDED.snapshot_ms
          WHERE entity_views.snapshot_ms < EXCLUDED.snapshot_ms`;
    },

    /** Forgets an entity's views (a deleted entity's, purged). */
    async delete(entityType: string, entityId: number): Promise<void> {
      await db.entityView.deleteMany({ where: { entityType, entityId } });
    },

    /** Whether any entity has views persisted. */
    async hasAny(): Promise<boolean> {
      return (await db.entityView.findFirst({ select: { entityId: true } })) !== null;
    },

    /** The snapshots of these entities of one type (those that have one). */
    async of(entityType: string, entityIds: readonly number[]): Promise<ViewSnapshot[]> {
      const rows = await db.entityView.findMany({ where: { entityType, entityId: { in: entityIds.map(BigInt) } } });
      return rows.map((r) => ({
        entityType: r.entityType,
        entityId: Number(r.entityId),
        total: Number(r.total),
        viewers: Number(r.viewers),
        sketch: Buffer.from(r.sketch),
        snapshotMs: Number(r.snapshotMs),
      }));
    },
  };
}

export type ViewStore = ReturnType<typeof createViewStore>;
