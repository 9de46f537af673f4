// The post and feed caches: what was being read while the cache was told to forget (a
// deletion announced, or a resync after an announcement was missed) is still answered. The
// post cache answered NOT_FOUND (the fault suite's Redis-loss rows, where a resync cleared it
// under a burst of likes), the feed cache nothing at all.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/client.js';
import { createFeedCache } from '../../src/db/feedCache.js';
import { createPostCache } from '../../src/db/postCache.js';
import { createPostStore } from '../../src/db/posts.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = createDb(database.url);
  await db.user.create({ data: { id: 1, name: 'author' } });
});
afterAll(async () => {
  await db.$disconnect();
  await database.drop();
});

describe('post and feed caches', () => {
  it('finds a live post whose lookup was under way when the cache was cleared or told to forget it', async () => {
    const posts = createPostStore(db);
    const cache = createPostCache(posts, 30_000);
    const { post } = await posts.create(1, 'hot post', 'liked a lot');
    // The second lookup joins the first one's fetch: lru-cache tells only the first it was aborted.
    const [cleared, joined] = [cache.get(post.id), cache.get(post.id)];
    cache.clear();
    const forgotten = cache.get(post.id);
    cache.forget(post.id);
    expect((await cleared)?.id).toBe(post.id);
    expect((await joined)?.id).toBe(post.id);
    expect((await forgotten)?.id).toBe(post.id);
    // A deleted one is gone for the next lookup, forgotten or not.
    await posts.softDelete(post.id);
    cache.forget(post.id);
    expect(await cache.get(post.id)).toBeNull();
  });

  it('serves a known post past its TTL while PostgreSQL does not answer, but not a missing one', async () => {
    const posts = createPostStore(db);
    const { post } = await posts.create(1, 'known', 'liked before PostgreSQL went away');
    let down = false;
    const store = {
      ...posts,
      liveByIds: async (ids: readonly number[]) => {
        if (down) throw new Error('PostgreSQL is not answering');
        return posts.liveByIds(ids);
      },
    };
    const cache = createPostCache(store, 20);
    expect((await cache.get(post.id))?.id).toBe(post.id);
    expect(await cache.get(post.id + 1000)).toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 50));
    down = true;
    expect(cache.fresh(post.id)).toBeUndefined(); // past its TTL: not fresh, yet still known
    expect((await cache.get(post.id))?.id).toBe(post.id);
    await expect(cache.get(post.id + 1000)).rejects.toThrow('PostgreSQL is not answering');
  });

  it('answers a feed page that was being read when every page was forgotten', async () => {
    const posts = createPostStore(db);
    const feed = createFeedCache(posts, 30_000);
    const { post } = await posts.create(1, 'newest', 'on top');
    const [page, joined] = [feed.page(5, null), feed.page(5, null)];
    feed.forgetAll();
    expect((await page)[0]?.id).toBe(post.id);
    expect((await joined)[0]?.id).toBe(post.id);
  });
});
