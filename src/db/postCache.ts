// Post lookups made to validate a mutation's target, cached so a burst of likes on one hot
// post does not reach PostgreSQL per request, and likes keep answering while it is away. Concurrent lookups of one id share a query.
// Deletions anywhere are announced to every process, which forgets the post at once
// (src/services/announcements.ts); a missing post is cached briefly so ids that do not exist
// yet are not remembered as missing for long.
import { LRUCache } from 'lru-cache';
import { fetchUnlessForgotten } from './cacheFetch.js';
import type { PostModel, PostStore } from './posts.js';

const MISSING_TTL_MS = 1000;

export function createPostCache(posts: PostStore, ttlMs: number) {
  const cache = new LRUCache<number, { post: PostModel | null }>({
    max: 50_000,
    ttl: Math.max(ttlMs, 1),
    // A post past its TTL is served while it is looked up again, and kept when that fails: a
    // like on a known post answers without waiting for PostgreSQL, even while PostgreSQL does
    // not answer (deletions reach the cache by announcement, not by expiry).
    allowStaleOnFetchRejection: true,
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
      // Only a known post is served stale: an id that was missing is looked up before answering.
      const known = cache.peek(id, { allowStale: true })?.post != null;
      const read = async () => ({ post: (await posts.liveByIds([id]))[0] ?? null });
      return (await fetchUnlessForgotten((status) => cache.fetch(id, { allowStale: known, status }), read)).post;
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
