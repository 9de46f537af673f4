// What Tally keeps relations and counters about, and the one way an entity is named
// everywhere (Redis keys, events, dirty sets, job ids): "<type>:<id>". Which types a
// deployment has, and their rules, is the registry's (src/domain/entityTypes.ts).
export const POST = 'post' as const;
export const USER = 'user' as const;
/** A type's name: `post`, `user`, or one of ENTITY_TYPES (snake_case, never ':'). */
export type EntityType = string;

export interface EntityRef {
  type: EntityType;
  id: number;
}

export const entityName = (entity: EntityRef) => `${entity.type}:${entity.id}`;

/** The entity an entityName names (a type never holds ':'). */
export function parseEntityName(name: string): EntityRef {
  const at = name.lastIndexOf(':');
  return { type: name.slice(0, at), id: Number(name.slice(at + 1)) };
}
