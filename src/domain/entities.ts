// What Tally keeps relations and counters about, and the one way an entity is named
// everywhere (Redis keys, events, dirty sets, job ids): "<type>:<id>".
export const POST = 'post' as const;
export const USER = 'user' as const;
export type EntityType = typeof POST | typeof USER;

export interface EntityRef {
  type: EntityType;
  id: number;
}

export const entityName = (entity: EntityRef) => `${entity.type}:${entity.id}`;

export const isEntityType = (type: string): type is EntityType => type === POST || type === USER;
