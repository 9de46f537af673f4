// Post lookups made to validate a mutation's target, cached so a burst of likes on one hot
// post does not reach PostgreSQL per request. Concurrent lookups of one id share a query.
// Deletions anywhere are announced to every process, which forgets the post at once
// (src/services/announcements.ts); a missing post is cached briefly so ids that do not exist
// yet are not remembered as missing for long.
import { LRUCache } from 'lru-cache';
import type { PostModel, PostStore } from './posts.js';

const MISSING_TTL_MS = 1000;

export function createPostCache(posts: PostStore, ttlMs: number) {
  const cache = new LRUCache<number, { post: PostModel | null }>({
    max: 50_000,
    ttl: Math.max(ttlMs, 1),
    fetchMethod: async (id, _stale, { options }) => {
      const [post] = await posts.liveByIds([id]);
      if (!post) options.ttl = Math.min(MISSING_TTL_MS, Math.max(ttlMs, 1));
      return { post: post ?? null };
    },
  });

  return {
    /** The live post, or null. */
    async get(id: number): Promise<PostModel | null> {
      if (ttlMs === 0) return (await posts.liveByIds([id]))[0] ?? null;
      return (await cache.fetch(id))?.post ?? null;
    },
    /** Forget a post in this process (it was deleted, here or elsewhere). */
    forget(id: number): void {
      cache.delete(id);
    },
    /** Forget every post (this process may have missed deletions). */
    clear(): void {
      cache.clear();
    },
  };
}

export type PostCache = ReturnType<typeof createPostCache>;
