// For tests that run Tally as a child process: a database and a Redis key prefix owned by
// the test file, created before its tests and removed after them.
import { afterAll, beforeAll } from 'vitest';
import { createTestDatabase, type TestDatabase } from './db.js';
import { TEST_REDIS_URL } from './env.js';
import { deleteKeys, uniquePrefix } from './redis.js';

export function useIsolatedStores() {
  const stores = {
    prefix: uniquePrefix(),
    db: null as unknown as TestDatabase,
    /** Environment for a Tally process using these stores. */
    env(): Record<string, string> {
      return { DATABASE_URL: stores.db.url, REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: stores.prefix };
    },
  };
  beforeAll(async () => {
    stores.db = await createTestDatabase();
  });
  afterAll(async () => {
    await stores.db.drop();
    await deleteKeys(stores.prefix);
  });
  return stores;
}
