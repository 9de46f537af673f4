// Registering and deleting the entities a product's own service owns (ENTITY_TYPES), for that
// service's mutations and its lifecycle messages (src/consumers/entityLifecycle.ts): each entry
// checked against the registry and the limits before anything is written (in a mutation a bad
// entry refuses the whole call), then applied by version (src/db/entities.ts).
import type { Service } from '../auth/jwt.js';
import type { PostCounters } from '../counters/postCounters.js';
import type { EntityStore, OwnedEntity } from '../db/entities.js';
import {
  type EntityChange,
  type EntityEntry,
  notOwned,
  type Registration,
  type RegistrationEntry,
  toDeletion,
  toRegistration,
} from '../domain/entityEntries.js';
import { TYPES } from '../domain/kinds.js';
import type { Relation } from '../domain/relations.js';
import { badInput } from '../errors.js';
import type { Logger } from '../log.js';

/** Entries one call may carry. */
export const MAX_ENTITIES_PER_CALL = 1000;
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

export function createEntityService(deps: EntityServiceDeps) {
  /** Applies checked registrations; returns the entities this call created or advanced. */
  async function applyRegistrations(registrations: readonly Registration[]): Promise<OwnedEntity[]> {
    const applied = await deps.entities.register(registrations);
    // Zeroed counters, so reading a new entity needs no fall-back to its facts (NX: kept when they exist).
    await deps.postCounters.initializeEntities(
      applied.filter((entity) => TYPES.withCounters.has(entity.type)).map((entity) => ({ type: entity.type, id: entity.id })),
    );
    return applied;
  }

  /** Applies checked deletions and tells every API process; returns the entities this call deleted. */
  async function applyDeletions(changes: readonly EntityChange[]): Promise<OwnedEntity[]> {
    const deleted = await deps.entities.delete(changes);
    await Promise.all(deleted.map((entity) => deps.announceEntityDeleted(entity.id)));
    return deleted;
  }

  return {
    applyRegistrations,
    applyDeletions,

    /** Registers `service`'s entities; the number of entries that changed something. */
    async register(service: Service, entries: readonly RegistrationEntry[]): Promise<number> {
      checkCount(entries);
      const applied = await applyRegistrations(entries.map(toRegistration));
      deps.logger.debug({ service: service.name, entries: entries.length, applied: applied.length }, 'registered entities');
      return applied.length;
    },

    /** Deletes `service`'s entities; the number of entries that deleted one (or left a tombstone). */
    async delete(service: Service, entries: readonly EntityEntry[]): Promise<number> {
      checkCount(entries);
      const deleted = await applyDeletions(entries.map(toDeletion));
      deps.logger.debug({ service: service.name, entries: entries.length, applied: deleted.length }, 'deleted entities');
      return deleted.length;
    },
  };
}

export type EntityService = ReturnType<typeof createEntityService>;
