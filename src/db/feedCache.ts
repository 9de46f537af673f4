// Feed pages cached for a moment: every viewer of the feed reads the same newest posts, so
// in a busy second they cost PostgreSQL one query per distinct page instead of one per
// request. Counts and viewer state are not in here (they come from Redis on every request);
// a new or deleted post shows up in another process's feed after at most the TTL, as counts
// do within their 1 s freshness promise. This process forgets every page when it writes a post.
import { LRUCache } from 'lru-cache';
import { fetchUnlessForgotten } from './cacheFetch.js';
import type { FeedPosition, PostModel, PostStore } from './posts.js';

/** Distinct pages kept (page size × cursor); the feed's hot pages are a handful. */
const PAGES_MAX = 1000;

export function createFeedCache(posts: PostStore, ttlMs: number) {
  const pages = new LRUCache<string, PostModel[], { limit: number; after: FeedPosition | null }>({
    max: PAGES_MAX,
    ttl: Math.max(ttlMs, 1),
    fetchMethod: (_key, _stale, { context }) => posts.feedPage(context.limit, context.after),
  });

  return {
    /** Like PostStore.feedPage, from the cache when the same page was read within the TTL. */
    async page(limit: number, after: FeedPosition | null): Promise<PostModel[]> {
      if (ttlMs === 0) return posts.feedPage(limit, after);
      const key = `${limit}:${after ? `${after.createdAt.getTime()}:${after.id}` : ''}`;
      return fetchUnlessForgotten(
        (status) => pages.fetch(key, { context: { limit, after }, status }),
        () => posts.feedPage(limit, after),
      );
    },
    /** After this process created or deleted a post: its own readers see it at once. */
    forgetAll(): void {
      pages.clear();
    },
  };
}

export type FeedCache = ReturnType<typeof createFeedCache>;
