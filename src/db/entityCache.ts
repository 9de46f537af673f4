// Lookups of entities a product owns, made to validate a mutation's target (src/db/liveCache.ts),
// by the owner's (type, key). Deletions are announced by Tally's id, so the cache also knows
// which key each id it holds has.
import { LRUCache } from 'lru-cache';
import type { EntityStore, OwnedEntity } from './entities.js';
import { createLiveCache } from './liveCache.js';

const MAX = 100_000;
const nameOf = (type: string, key: string) => `${type}\u0000${key}`;

export function createEntityCache(store: EntityStore, ttlMs: number) {
  const names = new LRUCache<number, string>({ max: MAX });
  const cache = createLiveCache<string, OwnedEntity>({
    load: async (name) => {
      const [type = '', key = ''] = name.split('\u0000');
      const [entity] = await store.liveByKeys(type, [key]);
      if (entity) names.set(entity.id, name);
      return entity ?? null;
    },
    ttlMs,
    max: MAX,
  });

  return {
    /** The live entity of `type` the owner calls `key`, or null. */
    get: (type: string, key: string): Promise<OwnedEntity | null> => cache.get(nameOf(type, key)),
    /** The entity if this process knows it within its TTL (null: known missing), else undefined; never waits. */
    fresh: (type: string, key: string): OwnedEntity | null | undefined => cache.fresh(nameOf(type, key)),
    /** The live entity Tally calls `id`, or null (a live push names entities so). */
    async byId(id: number): Promise<OwnedEntity | null> {
      const name = names.get(id);
      if (name !== undefined) return cache.get(name);
      const [entity] = await store.liveByIds([id]);
      return entity ? cache.get(nameOf(entity.type, entity.key)) : null;
    },
    /** Forget an entity in this process (it was deleted, here or elsewhere), by Tally's id. */
    forget(id: number): void {
      const name = names.get(id);
      names.delete(id);
      if (name !== undefined) cache.forget(name);
    },
    /** Forget every entity (this process may have missed deletions). */
    clear(): void {
      names.clear();
      cache.clear();
    },
  };
}

export type EntityCache = ReturnType<typeof createEntityCache>;
