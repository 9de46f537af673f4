// Lookups made to validate a mutation's target (a post, an entity a product owns), cached so
// a burst of likes on one hot target does not reach PostgreSQL per request, and likes keep
// answering while it is away. Concurrent lookups of one key share a query. Deletions anywhere
// are announced to every process, which forgets the target at once
// (src/services/announcements.ts); a missing target is cached briefly so keys that do not
// exist yet are not remembered as missing for long.
import { LRUCache } from 'lru-cache';
import { fetchUnlessForgotten } from './cacheFetch.js';

const MISSING_TTL_MS = 1000;

export function createLiveCache<K extends string | number, V extends object>(options: {
  /** The live target, or null. */
  load: (key: K) => Promise<V | null>;
  ttlMs: number;
  max: number;
}) {
  const { load, ttlMs } = options;
  const cache = new LRUCache<K, { value: V | null }>({
    max: options.max,
    ttl: Math.max(ttlMs, 1),
    // A target past its TTL is served while it is looked up again, and kept when that fails: a
    // like on a known target answers without waiting for PostgreSQL, even while PostgreSQL does
    // not answer (deletions reach the cache by announcement, not by expiry).
    allowStaleOnFetchRejection: true,
    fetchMethod: async (key, _stale, { options: fetchOptions }) => {
      const value = await load(key);
      if (!value) fetchOptions.ttl = Math.min(MISSING_TTL_MS, Math.max(ttlMs, 1));
      return { value };
    },
  });
  const read = async (key: K) => ({ value: await load(key) });

  /** The entry within its TTL; one past it stays, to be served while it is looked up again. */
  const fresh = (key: K) => (ttlMs === 0 ? undefined : cache.get(key, { noDeleteOnStaleGet: true }));

  return {
    /** The live target, or null. */
    async get(key: K): Promise<V | null> {
      if (ttlMs === 0) return load(key);
      // A hit within its TTL needs none of fetch's machinery (a page of views looks up 20).
      const hit = fresh(key);
      if (hit) return hit.value;
      // Only a known target is served stale: a key that was missing is looked up before answering.
      const known = cache.peek(key, { allowStale: true })?.value != null;
      return (
        await fetchUnlessForgotten(
          (status) => cache.fetch(key, { allowStale: known, allowStaleOnFetchRejection: known, status }),
          () => read(key),
        )
      ).value;
    },
    /** The target if this process knows it within its TTL (null: known missing), else undefined; never waits. */
    fresh: (key: K): V | null | undefined => fresh(key)?.value,
    /** Forget a target in this process (it was deleted, here or elsewhere). */
    forget(key: K): void {
      cache.delete(key);
    },
    /** Forget every target (this process may have missed deletions). */
    clear(): void {
      cache.clear();
    },
  };
}
