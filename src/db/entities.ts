// Entities a product's own service owns, in PostgreSQL: registered and deleted by the owner
// (a service mutation, lifecycle messages, the backfill command), each change carrying the
// owner's version of the entity, so a message applied twice or out of order changes nothing.
// An entity's owner user is the one it was registered with; deletion is final (a deleted key
// stays a tombstone, so a late registration does not bring it back).
import type { EntityChange, Registration } from '../domain/entityEntries.js';
import type { Db } from './client.js';

export interface OwnedEntity {
  /** Tally's id of it: the entity id of its facts, keys and events. */
  id: number;
  type: string;
  /** The owner's id of it. */
  key: string;
  ownerId: number | null;
}

interface Row {
  id: bigint;
  entity_type: string;
  key: string;
  owner_id: bigint | null;
}

const toEntity = (row: Row): OwnedEntity => ({
  id: Number(row.id),
  type: row.entity_type,
  key: row.key,
  ownerId: row.owner_id === null ? null : Number(row.owner_id),
});

/** One change per (type, key), the highest version's: a batch may name an entity twice. */
function newestPerKey<T extends EntityChange>(changes: readonly T[]): T[] {
  const newest = new Map<string, T>();
  for (const change of changes) {
    const id = `${change.type}\u0000${change.key}`;
    const seen = newest.get(id);
    if (!seen || seen.version < change.version) newest.set(id, change);
  }
  return [...newest.values()];
}

export function createEntityStore(db: Db) {
  /** The live entities among Tally's `ids` (any order). */
  async function liveByIds(ids: readonly number[]): Promise<OwnedEntity[]> {
    if (ids.length === 0) return [];
    const found = await db.$queryRaw<Row[]>`
      SELECT id, entity_type, key, owner_id FROM entities WHERE id = ANY(${[...ids]}::bigint[]) AND deleted_at IS NULL`;
    return found.map(toEntity);
  }

  return {
    /** Registers entities (or moves their version on); returns the ones this call created or advanced. */
    async register(registrations: readonly Registration[]): Promise<OwnedEntity[]> {
      const rows = newestPerKey(registrations);
      if (rows.length === 0) return [];
      const found = await db.$queryRaw<Row[]>`
        INSERT INTO entities (entity_type, key, owner_id, version)
        SELECT * FROM unnest(${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.key)}::text[],
                             ${rows.map((r) => r.ownerId)}::bigint[], ${rows.map((r) => r.version)}::bigint[])
        ON CONFLICT (entity_type, key) DO UPDATE SET version = EXCLUDED.version
          WHERE entities.deleted_at IS NULL AND entities.version < EXCLUDED.version
        RETURNING id, entity_type, key, owner_id`;
      return found.map(toEntity);
    },

    /** Deletes entities (a tombstone for a key never registered); returns the ones this call deleted. */
    async delete(changes: readonly EntityChange[]): Promise<OwnedEntity[]> {
      const rows = newestPerKey(changes);
      if (rows.length === 0) return [];
      const found = await db.$queryRaw<Row[]>`
        INSERT INTO entities (entity_type, key, owner_id, version, deleted_at)
        SELECT t, k, NULL, v, now() FROM unnest(${rows.map((r) => r.type)}::text[], ${rows.map((r) => r.key)}::text[],
                                                ${rows.map((r) => r.version)}::bigint[]) AS c(t, k, v)
        ON CONFLICT (entity_type, key) DO UPDATE SET version = EXCLUDED.version, deleted_at = now()
          WHERE entities.deleted_at IS NULL AND entities.version < EXCLUDED.version
        RETURNING id, entity_type, key, owner_id`;
      return found.map(toEntity);
    },

    /** The live entities of `type` among `keys` (any order; a deleted or unknown key is left out). */
    async liveByKeys(type: string, keys: readonly string[]): Promise<OwnedEntity[]> {
      if (keys.length === 0) return [];
      const found = await db.$queryRaw<Row[]>`
        SELECT id, entity_type, key, owner_id FROM entities
        WHERE entity_type = ${type} AND key = ANY(${[...keys]}::text[]) AND deleted_at IS NULL`;
      return found.map(toEntity);
    },

    /** Up to `n` live entities drawn at random (for reconciliation's sample): random ids between the lowest and the highest. */
    async randomLive(n: number): Promise<OwnedEntity[]> {
      if (n === 0) return [];
      const [range] = await db.$queryRaw<
        { low: bigint | null; high: bigint | null }[]
      >`SELECT min(id) AS low, max(id) AS high FROM entities`;
      if (!range || range.low === null || range.high === null) return [];
      const [low, high] = [Number(range.low), Number(range.high)];
      const ids = new Set(Array.from({ length: n }, () => low + Math.floor(Math.random() * (high - low + 1))));
      return liveByIds([...ids]);
    },

    /** Deleted entities whose facts are still to be removed, deleted before `cutoff`, oldest first. */
    async duePurge(cutoff: Date, limit: number): Promise<OwnedEntity[]> {
      const found = await db.$queryRaw<Row[]>`
        SELECT id, entity_type, key, owner_id FROM entities
        WHERE deleted_at IS NOT NULL AND deleted_at < ${cutoff} AND purged_at IS NULL
        ORDER BY deleted_at, id LIMIT ${limit}`;
      return found.map(toEntity);
    },

    /** Records that the entity's facts are removed. */
    async markPurged(id: number): Promise<void> {
      await db.$executeRaw`UPDATE entities SET purged_at = now() WHERE id = ${id}`;
    },

    /** The live entities among Tally's `ids` (any order). */
    liveByIds,
  };
}

export type EntityStore = ReturnType<typeof createEntityStore>;
