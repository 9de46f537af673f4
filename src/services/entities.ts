// Registering and deleting the entities a product's own service owns (ENTITY_TYPES), for that
// service: each entry checked against the registry and the limits before anything is written
// (a bad entry refuses the whole call), then applied by version (src/db/entities.ts).
import type { Service } from '../auth/jwt.js';
import type { PostCounters } from '../counters/postCounters.js';
import type { EntityChange, EntityStore, Registration } from '../db/entities.js';
import { TYPES } from '../domain/kinds.js';
import type { Relation } from '../domain/relations.js';
import { badInput } from '../errors.js';
import type { Logger } from '../log.js';

/** Entries one call may carry. */
export const MAX_ENTITIES_PER_CALL = 1000;
const MAX_KEY_CHARS = 128;
const VERSION = /^[1-9][0-9]{0,18}$/;
const MAX_VERSION = 2n ** 63n - 1n;
const USER_ID = /^[1-9][0-9]{0,15}$/;

export interface EntityEntry {
  type: string;
  id: string;
  version: string;
}

export interface EntityServiceDeps {
  entities: EntityStore;
  postCounters: Pick<PostCounters, 'initializeEntities'>;
  /** Tells every API process to forget the deleted entity (Tally's id) in its caches. */
  announceEntityDeleted: (id: number) => Promise<void>;
  logger: Logger;
}

function checkCount(entries: readonly unknown[]) {
  if (entries.length === 0 || entries.length > MAX_ENTITIES_PER_CALL) {
    throw badInput(`between 1 and ${MAX_ENTITIES_PER_CALL} entities per call (got ${entries.length})`, { argumentName: 'entities' });
  }
}

/** Why `type` is refused: not one of the types this deployment's services own (null: it is). */
function notOwned(type: string): string | null {
  if (TYPES.isOwned(type)) return null;
  const names = TYPES.owned.map((owned) => owned.name);
  return `"${type}" is not a type this deployment's services own (${names.length ? names.join(', ') : 'it has none: ENTITY_TYPES'})`;
}

/** `type` if this deployment's services own it, else BAD_USER_INPUT naming the ones they do. */
export function ownerType(type: string, argumentName = 'type'): string {
  const refusal = notOwned(type);
  if (refusal) throw badInput(refusal, { argumentName });
  return type;
}

/** `relation` if entities of `type` take it, else BAD_USER_INPUT. */
export function kindTakenBy(type: string, relation: Relation): Relation {
  if (!TYPES.kindsOf(type).includes(relation)) throw badInput(`a ${type} takes no ${relation.name}`);
  return relation;
}

/** The entry as the store takes it; BAD_USER_INPUT naming the entry and the field otherwise. */
function change(entry: EntityEntry, at: number): EntityChange {
  const refuse = (field: string, why: string) => badInput(`entities[${at}].${field}: ${why}`, { argumentName: 'entities' });
  const refusal = notOwned(entry.type);
  if (refusal) throw refuse('type', refusal);
  if (entry.id.length === 0 || [...entry.id].length > MAX_KEY_CHARS || entry.id.trim() !== entry.id) {
    throw refuse('id', `1 to ${MAX_KEY_CHARS} characters, without surrounding blanks`);
  }
  if (!VERSION.test(entry.version) || BigInt(entry.version) > MAX_VERSION) throw refuse('version', 'a positive integer below 2^63');
  return { type: entry.type, key: entry.id, version: BigInt(entry.version) };
}

export function createEntityService(deps: EntityServiceDeps) {
  return {
    /** Registers `service`'s entities; the number of entries that changed something. */
    async register(service: Service, entries: readonly (EntityEntry & { ownerId?: string | null })[]): Promise<number> {
      checkCount(entries);
      const registrations: Registration[] = entries.map((entry, at) => {
        const base = change(entry, at);
        const owned = TYPES.get(entry.type).owned;
        const ownerId = entry.ownerId ?? null;
        if (owned && (ownerId === null || !USER_ID.test(ownerId) || !Number.isSafeInteger(Number(ownerId)))) {
          throw badInput(`entities[${at}].ownerId: a ${entry.type} has an owner: a user id, a positive integer below 2^53`, {
            argumentName: 'entities',
          });
        }
        if (!owned && ownerId !== null) {
          throw badInput(`entities[${at}].ownerId: a ${entry.type} has no owner (ENTITY_TYPES says unowned)`, { argumentName: 'entities' });
        }
        return { ...base, ownerId: ownerId === null ? null : Number(ownerId) };
      });
      const applied = await deps.entities.register(registrations);
      // Zeroed counters, so reading a new entity needs no fall-back to its facts (NX: kept when they exist).
      await deps.postCounters.initializeEntities(
        applied.filter((entity) => TYPES.eventCounted.has(entity.type)).map((entity) => ({ type: entity.type, id: entity.id })),
      );
      deps.logger.debug({ service: service.name, entries: entries.length, applied: applied.length }, 'registered entities');
      return applied.length;
    },

    /** Deletes `service`'s entities; the number of entries that deleted one (or left a tombstone). */
    async delete(service: Service, entries: readonly EntityEntry[]): Promise<number> {
      checkCount(entries);
      const deleted = await deps.entities.delete(entries.map(change));
      await Promise.all(deleted.map((entity) => deps.announceEntityDeleted(entity.id)));
      deps.logger.debug({ service: service.name, entries: entries.length, applied: deleted.length }, 'deleted entities');
      return deleted.length;
    },
  };
}

export type EntityService = ReturnType<typeof createEntityService>;
