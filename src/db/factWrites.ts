// Writes relation facts in one statement: each row only ever moves to a newer version, so a
// redelivered or reordered event is harmless. Returns the facts that really changed, with
// what they were before (the user counters move by exactly that).
import type { Db } from './client.js';

/** A client or an interactive transaction. */
type Sql = Pick<Db, '$queryRaw'>;

export interface VersionedFact {
  userId: number;
  entityType: string;
  entityId: number;
  kind: string;
  active: boolean;
  /** The packed id of the event that set it (src/db/factVersion.ts). */
  version: bigint;
  at: Date;
}

export interface ChangedFact {
  userId: number;
  entityType: string;
  entityId: number;
  kind: string;
  active: boolean;
  wasActive: boolean;
}

interface RawChanged {
  user_id: bigint;
  entity_type: string;
  entity_id: bigint;
  kind: string;
  active: boolean;
  was_active: boolean;
}

/** At most one row per (user, entity, kind): one statement cannot update a row twice. */
export async function writeFacts(sql: Sql, facts: readonly VersionedFact[]): Promise<ChangedFact[]> {
  if (facts.length === 0) return [];
  const changed = await sql.$queryRaw<RawChanged[]>`
    WITH incoming AS (
      SELECT * FROM unnest(
        ${facts.map((r) => String(r.userId))}::bigint[],
        ${facts.map((r) => r.entityType)}::varchar[],
        ${facts.map((r) => String(r.entityId))}::bigint[],
        ${facts.map((r) => r.kind)}::varchar[],
        ${facts.map((r) => r.active)}::boolean[],
        ${facts.map((r) => String(r.version))}::bigint[],
        ${facts.map((r) => r.at.toISOString())}::timestamptz[]
      ) AS i(user_id, entity_type, entity_id, kind, active, version, updated_at)
    ),
    before AS (
      SELECT f.user_id, f.entity_type, f.entity_id, f.kind, f.active
      FROM relation_facts f JOIN incoming USING (user_id, entity_type, entity_id, kind)
    ),
    written AS (
      INSERT INTO relation_facts (user_id, entity_type, entity_id, kind, active, version, updated_at)
      SELECT user_id, entity_type, entity_id, kind, active, version, updated_at FROM incoming
      ON CONFLICT (user_id, entity_type, entity_id, kind) DO UPDATE
        SET active = EXCLUDED.active, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
        WHERE relation_facts.version < EXCLUDED.version
      RETURNING user_id, entity_type, entity_id, kind, active
    )
    SELECT w.user_id, w.entity_type, w.entity_id, w.kind, w.active, COALESCE(b.active, false) AS was_active
    FROM written w LEFT JOIN before b USING (user_id, entity_type, entity_id, kind)`;
  return changed.map((c) => ({
    userId: Number(c.user_id),
    entityType: c.entity_type,
    entityId: Number(c.entity_id),
    kind: c.kind,
    active: c.active,
    wasActive: c.was_active,
  }));
}
