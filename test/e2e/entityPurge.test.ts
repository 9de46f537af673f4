// What becomes of a deleted entity's facts and counters: kept for DELETED_ENTITY_RETENTION_MS
// (they still count for its owner), then removed through the write path by a scheduled worker
// job, so every count that included them moves by exactly their share.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIKE } from '../../src/domain/relations.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'comment;video:like,reactions:unowned';
});
const RETENTION_MS = 4000;

let t: TestApp;
let service: string;
beforeAll(async () => {
  t = await startTestApp({
    ENTITY_TYPES: process.env.ENTITY_TYPES!,
    SERVICE_SECRET: 'service-secret-0123456789abcdef0123456789',
    DELETED_ENTITY_RETENTION_MS: String(RETENTION_MS),
    ENTITY_PURGE_INTERVAL_MS: '1000',
    // Fewer facts per run than the entity holds: the purge takes several runs.
    ENTITY_PURGE_BATCH: '4',
  });
  service = await t.app.deps.auth.signService('blog');
});
afterAll(() => t.stop());

const OWNER = 70;
const LIKERS = [1, 2, 3, 4, 5];

async function act(userId: number, document: string, variables: Record<string, unknown>) {
  const res = await t.gql(document, variables, { token: await t.token(userId) });
  expect(res.errors).toBeUndefined();
}
const like = (userId: number, type: string, id: string, kind = 'LIKE') =>
  act(userId, `mutation($i: SetEntityRelationInput!) { setEntityRelation(input: $i) { changed } }`, {
    i: { type, id, kind, active: true },
  });
const react = (userId: number, type: string, id: string, content: string) =>
  act(userId, `mutation($i: SetEntityReactionInput!) { setEntityReaction(input: $i) { changed } }`, {
    i: { type, id, content, active: true },
  });
const received = async () => {
  const [counts] = await t.app.deps.userCounters.load([OWNER]);
  return { likes: counts?.likesReceived ?? 0, favs: counts?.favsReceived ?? 0 };
};
const activeFacts = (entityId: number) => t.app.db.relationFact.count({ where: { entityId, active: true, entityType: { not: 'post' } } });

describe('a deleted entity', () => {
  it('keeps its facts for the retention time, then loses them through the write path: every count exact', async () => {
    const registered = await t.gql(
      `mutation($e: [EntityRegistration!]!) { registerEntities(input: { entities: $e }) { applied } }`,
      {
        e: [
          { type: 'comment', id: 'gone', ownerId: String(OWNER), version: '1' },
          { type: 'comment', id: 'kept', ownerId: String(OWNER), version: '1' },
          { type: 'video', id: 'gone-v', version: '1' },
        ],
      },
      { token: service },
    );
    expect(registered.data.registerEntities.applied).toBe(3);
    for (const userId of LIKERS) {
      await like(userId, 'comment', 'gone');
      await like(userId, 'comment', 'kept');
      await react(userId, 'comment', 'gone', 'HEART');
      await react(userId, 'video', 'gone-v', 'ROCKET');
      await act(userId, `mutation { recordEntityViews(input: { type: "comment", ids: ["gone"] }) { views { counted } } }`, {});
    }
    await like(1, 'comment', 'gone', 'FAV');
    expect(await waitFor(received, (r) => r.likes === 10 && r.favs === 1, { what: "the owner's counters" })).toEqual({
      likes: 10,
      favs: 1,
    });
    const [gone, goneVideo] = await Promise.all([
      t.app.deps.entityCache.get('comment', 'gone'),
      t.app.deps.entityCache.get('video', 'gone-v'),
    ]);
    await waitFor(
      () => activeFacts(gone!.id),
      (n) => n === 11,
      { what: 'the facts persisted' },
    );
    const viewRows = () => t.app.db.entityView.findMany({ where: { entityType: 'comment', entityId: BigInt(gone!.id) } });
    await waitFor(viewRows, (rows) => rows[0]?.total === 5n, { what: 'the views persisted' });

    const deleted = await t.gql(
      `mutation { deleteEntities(input: { entities: [{ type: "comment", id: "gone", version: "2" }, { type: "video", id: "gone-v", version: "2" }] }) { applied } }`,
      {},
      { token: service },
    );
    expect(deleted.data.deleteEntities.applied).toBe(2);
    const deletedAt = Date.now();

    // Within the retention time a run removes nothing: the facts still count for the owner.
    expect(await t.app.workers!.entityPurge.run()).toEqual({ purged: 0, undone: 0 });
    expect(Date.now() - deletedAt).toBeLessThan(RETENTION_MS);
    expect(await activeFacts(gone!.id)).toBe(11);
    expect(await received()).toEqual({ likes: 10, favs: 1 });

    // Then the scheduled job removes them, several runs of 4 facts, and the counters with them.
    const purgedAt = (id: number) => t.app.db.entity.findUnique({ where: { id: BigInt(id) } }).then((row) => row?.purgedAt ?? null);
    await waitFor(
      async () => [await purgedAt(gone!.id), await purgedAt(goneVideo!.id)],
      (both) => both.every((at) => at !== null),
      { what: 'both purged', timeoutMs: 30_000 },
    );
    expect((await purgedAt(gone!.id))!.getTime()).toBeGreaterThanOrEqual(deletedAt + RETENTION_MS);
    expect(await activeFacts(gone!.id)).toBe(0);
    expect(await activeFacts(goneVideo!.id)).toBe(0);
    expect(await received()).toEqual({ likes: 5, favs: 0 });
    for (const entity of [gone!, goneVideo!]) {
      expect(await t.app.redis.exists(t.app.keys.counters({ type: entity.type, id: entity.id }))).toBe(0);
    }
    // Its views with them: the sketch, the pending mark and the row in PostgreSQL.
    const goneRef = { type: 'comment', id: gone!.id };
    expect(await t.app.redis.exists(t.app.keys.viewers(goneRef))).toBe(0);
    expect(await t.app.redis.sismember(t.app.keys.viewsPending(t.app.keys.partitionOf(goneRef)), `comment:${gone!.id}`)).toBe(0);
    expect(await viewRows()).toEqual([]);

    // The entity that was not deleted is untouched.
    const kept = await t.gql(`query { entities(type: "comment", ids: ["kept"]) { counts { likes } } }`);
    expect(kept.data.entities[0].counts.likes).toBe(LIKERS.length);
    const [keptCounts] = await t.app.deps.postCounters.loadEntities([
      { type: 'comment', id: (await t.app.deps.entityCache.get('comment', 'kept'))!.id },
    ]);
    expect(keptCounts!.slots[LIKE.slot!]).toBe(LIKERS.length);
  }, 60_000);
});
