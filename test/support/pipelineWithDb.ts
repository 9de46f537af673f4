// A counter fixture plus a database of its own and a Prisma client on it, for tests of the
// parts that join Redis and PostgreSQL (persister, recovery). Hooks are registered here.
import { afterAll, beforeAll } from 'vitest';
import { createFactPersister } from '../../src/consumers/factPersister.js';
import { createUserCounters } from '../../src/counters/userCounters.js';
import { createDb, type Db } from '../../src/db/client.js';
import { createUserCounterStore } from '../../src/db/userCounters.js';
import { createLogger } from '../../src/log.js';
import { type CounterFixture, createCounterFixture } from './counterFixture.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export function usePipelineWithDb(options: { partitions?: number } = {}) {
  const state = {
    f: null as unknown as CounterFixture,
    db: null as unknown as Db,
    /** The fact persister on this fixture's Redis and database. */
    persister() {
      const { f, db } = state;
      const userCounters = createUserCounters({ redis: f.redis, keys: f.keys, store: createUserCounterStore(db) });
      return createFactPersister({ db, redis: f.redis, keys: f.keys, userCounters, logger: createLogger({ logLevel: 'silent' }) });
    },
  };
  let testDb: TestDatabase;
  beforeAll(async () => {
    state.f = createCounterFixture({ partitions: options.partitions ?? 2 });
    testDb = await createTestDatabase();
    state.db = createDb(testDb.url);
  });
  afterAll(async () => {
    await state.db.$disconnect();
    await testDb.drop();
    await state.f.close();
  });
  return state;
}
