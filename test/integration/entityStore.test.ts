import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDb, type Db } from '../../src/db/client.js';
import { createEntityStore, type EntityStore } from '../../src/db/entities.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let testDb: TestDatabase;
let db: Db;
let store: EntityStore;
beforeAll(async () => {
  testDb = await createTestDatabase();
  db = createDb(testDb.url);
  store = createEntityStore(db);
});
afterAll(async () => {
  await db.$disconnect();
  await testDb.drop();
});

const keysOf = (list: { key: string }[]) => list.map((e) => e.key).sort();

describe('the entity store', () => {
  it('registers an entity once under an id of its own, whatever order and how often its messages come', async () => {
    const [first] = await store.register([{ type: 'comment', key: 'c-1', ownerId: 7, version: 5n }]);
    expect(first).toMatchObject({ type: 'comment', key: 'c-1', ownerId: 7 });
    // The same message again, an older one, another owner: nothing changes.
    expect(await store.register([{ type: 'comment', key: 'c-1', ownerId: 7, version: 5n }])).toEqual([]);
    expect(await store.register([{ type: 'comment', key: 'c-1', ownerId: 8, version: 3n }])).toEqual([]);
    const [advanced] = await store.register([{ type: 'comment', key: 'c-1', ownerId: 8, version: 6n }]);
    expect(advanced).toEqual(first); // same id, same owner
    // Keys are per type; a batch may name one twice.
    const batch = await store.register([
      { type: 'video', key: 'c-1', ownerId: null, version: 1n },
      { type: 'comment', key: 'c-2', ownerId: 7, version: 1n },
      { type: 'comment', key: 'c-2', ownerId: 7, version: 2n },
    ]);
    expect(keysOf(batch)).toEqual(['c-1', 'c-2']);
    expect(new Set([first!.id, ...batch.map((e) => e.id)]).size).toBe(3);
    expect(keysOf(await store.liveByKeys('comment', ['c-1', 'c-2', 'c-3']))).toEqual(['c-1', 'c-2']);
    expect(await store.liveByIds([first!.id])).toEqual([first]);
  });

  it('deletes for good: a tombstone outlives later or replayed registrations', async () => {
    const [entity] = await store.register([{ type: 'comment', key: 'd-1', ownerId: 3, version: 1n }]);
    expect(await store.delete([{ type: 'comment', key: 'd-1', version: 1n }])).toEqual([]); // not newer
    expect(await store.delete([{ type: 'comment', key: 'd-1', version: 2n }])).toEqual([entity]);
    expect(await store.delete([{ type: 'comment', key: 'd-1', version: 3n }])).toEqual([]);
    expect(await store.register([{ type: 'comment', key: 'd-1', ownerId: 3, version: 9n }])).toEqual([]);
    expect(await store.liveByKeys('comment', ['d-1'])).toEqual([]);
    expect(await store.liveByIds([entity!.id])).toEqual([]);
    // Deleted before it was ever registered (messages out of order): it never appears.
    await store.delete([{ type: 'comment', key: 'd-2', version: 4n }]);
    expect(await store.register([{ type: 'comment', key: 'd-2', ownerId: 3, version: 1n }])).toEqual([]);
    expect(await store.liveByKeys('comment', ['d-2'])).toEqual([]);
  });
});
