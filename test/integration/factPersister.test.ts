import { describe, expect, it } from 'vitest';
import { packVersion, unpackVersion } from '../../src/db/factVersion.js';
import { PERSISTER_GROUP } from '../../src/events/groups.js';
import type { EventBatch } from '../../src/events/types.js';
import { usePipelineWithDb } from '../support/pipelineWithDb.js';
import { waitUntil } from '../support/wait.js';

const pipeline = usePipelineWithDb();

const persister = () => pipeline.persister();

async function factOf(userId: number, postId: number, kind = 'like') {
  const row = await pipeline.db.relationFact.findUnique({
    where: { userId_entityType_entityId_kind: { userId, entityType: 'post', entityId: postId, kind } },
  });
  return row && { active: row.active, version: unpackVersion(row.version) };
}

const only = (batch: EventBatch, ...indexes: number[]): EventBatch => ({ ...batch, entries: indexes.map((i) => batch.entries[i]!) });

describe('fact versions', () => {
  it('pack outbox ids so that numeric order is event order', () => {
    expect(unpackVersion(packVersion('1796105000000-7'))).toBe('1796105000000-7');
    expect(packVersion('1796105000000-10') > packVersion('1796105000000-9')).toBe(true);
    expect(packVersion('1796105000001-0') > packVersion('1796105000000-4000000')).toBe(true);
  });
});

describe('the fact persister', () => {
  it('keeps the newest state when a batch is redelivered or events arrive out of order', async () => {
    const { f, db } = pipeline;
    const post = f.postIn(0);
    await f.set(1, post, true);
    await f.set(1, post, false);
    await f.set(1, post, true);
    await f.set(2, post, true);
    await f.set(2, post, false);
    const batch = await f.batchOf(0);
    const ids = batch.entries.map((e) => e.event.id);

    // The newest first, then the older ones: they must not win.
    await persister().persist(only(batch, 2, 4));
    await persister().persist(only(batch, 0, 1, 3));
    expect(await factOf(1, post)).toEqual({ active: true, version: ids[2] });
    expect(await factOf(2, post)).toEqual({ active: false, version: ids[4] });

    // The whole batch again, twice: nothing moves.
    await persister().persist(batch);
    await persister().persist(batch);
    expect(await factOf(1, post)).toEqual({ active: true, version: ids[2] });
    expect(await db.relationFact.count({ where: { entityId: post } })).toBe(2);
  });

  it('as consumer group counter-facts, makes PostgreSQL hold what the bitmaps hold', async () => {
    const { f, db } = pipeline;
    const subscription = persister().subscribe(f.eventLog(16));
    await subscription.start();
    try {
      const posts = [f.postIn(0, 500), f.postIn(1, 500)];
      for (let u = 10; u < 60; u++) {
        for (const post of posts) {
          await f.set(u, post, true, u % 2 ? 'LIKE' : 'FAV');
          if (u % 5 === 0) await f.set(u, post, false, u % 2 ? 'LIKE' : 'FAV');
        }
      }
      const caughtUp = async () => {
        for (const p of f.allPartitions) {
          const [pending] = await f.redis.xpending(f.keys.outbox(p), PERSISTER_GROUP);
          const groups = (await f.redis.xinfo('GROUPS', f.keys.outbox(p))) as unknown[][];
          const group = groups.find((g) => g[1] === PERSISTER_GROUP)!;
          if (pending !== 0 || group[group.indexOf('lag') + 1] !== 0) return false;
        }
        return true;
      };
      await waitUntil(caughtUp, { what: 'the persister to catch up' });
      // The facts each user holds, named, so a difference says which ones (not only how many).
      const truth = Array.from({ length: 50 }, (_, i) => 10 + i)
        .filter((u) => u % 5 !== 0)
        .map((u) => `${u % 2 ? 'like' : 'fav'} of user ${u}`);
      for (const post of posts) {
        expect(await f.factsOf(post)).toEqual({ likes: 20, favs: 20 });
        const rows = await db.relationFact.findMany({ where: { entityId: post, active: true }, orderBy: { userId: 'asc' } });
        expect(rows.map((r) => `${r.kind} of user ${r.userId}`)).toEqual(truth);
      }
    } finally {
      await subscription.stop();
    }
  });
});
