// A counter fixture plus a database of its own and a Prisma client on it, for tests of the
// parts that join Redis and PostgreSQL (persister, recovery). Hooks are registered here.
import { afterAll, beforeAll } from 'vitest';
import { createDb, type Db } from '../../src/db/client.js';
import { createCounterFixture, type CounterFixture } from './counterFixture.js';
import { createTestDatabase, type TestDatabase } from './db.js';

export function usePipelineWithDb(options: { partitions?: number } = {}) {
  const state = { f: null as unknown as CounterFixture, db: null as unknown as Db };
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
