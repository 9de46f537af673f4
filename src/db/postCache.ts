// Post lookups made to validate a mutation's target (src/db/liveCache.ts).
import { createLiveCache } from './liveCache.js';
import type { PostModel, PostStore } from './posts.js';

export function createPostCache(posts: PostStore, ttlMs: number) {
  return createLiveCache<number, PostModel>({ load: async (id) => (await posts.liveByIds([id]))[0] ?? null, ttlMs, max: 50_000 });
}

export type PostCache = ReturnType<typeof createPostCache>;
