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
