// What the owning service says about one of its entities (a registration or a deletion), as
// the store takes it, and the checks an entry must pass first: shared by the service
// mutations and the lifecycle messages on the event log.
import { badInput } from '../errors.js';
import { TYPES } from './kinds.js';

export interface EntityChange {
  type: string;
  key: string;
  /** The owner's version of the entity (a sequence or a time): only a higher one changes anything. */
  version: bigint;
}

export interface Registration extends EntityChange {
  ownerId: number | null;
}

const MAX_KEY_CHARS = 128;
const VERSION = /^[1-9][0-9]{0,18}$/;
const MAX_VERSION = 2n ** 63n - 1n;
const USER_ID = /^[1-9][0-9]{0,15}$/;

export interface EntityEntry {
  type: string;
  id: string;
  version: string;
}

export interface RegistrationEntry extends EntityEntry {
  ownerId?: string | null;
}

/** Why `type` is refused: not one of the types this deployment's services own (null: it is). */
export function notOwned(type: string): string | null {
  if (TYPES.isOwned(type)) return null;
  const names = TYPES.owned.map((owned) => owned.name);
  return `"${type}" is not a type this deployment's services own (${names.length ? names.join(', ') : 'it has none: ENTITY_TYPES'})`;
}

/** The entry as the store takes it; BAD_USER_INPUT naming the entry and the field otherwise. */
export function toDeletion(entry: EntityEntry, at: number): EntityChange {
  const refuse = (field: string, why: string) => badInput(`entities[${at}].${field}: ${why}`, { argumentName: 'entities' });
  const refusal = notOwned(entry.type);
  if (refusal) throw refuse('type', refusal);
  if (entry.id.length === 0 || [...entry.id].length > MAX_KEY_CHARS || entry.id.trim() !== entry.id) {
    throw refuse('id', `1 to ${MAX_KEY_CHARS} characters, without surrounding blanks`);
  }
  if (!VERSION.test(entry.version) || BigInt(entry.version) > MAX_VERSION) throw refuse('version', 'a positive integer below 2^63');
  return { type: entry.type, key: entry.id, version: BigInt(entry.version) };
}

/** The registration as the store takes it (an owner where the type has one); BAD_USER_INPUT otherwise. */
export function toRegistration(entry: RegistrationEntry, at: number): Registration {
  const base = toDeletion(entry, at);
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
}
