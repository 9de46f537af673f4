import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';
import { createRecoveryParts, createStores } from '../../src/process/parts.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import type { RecoveryProgress } from '../../src/recovery/recover.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { usePipelineWithDb } from '../support/pipelineWithDb.js';
import { deleteKeys } from '../support/redis.js';

const pipeline = usePipelineWithDb();
const logger = createLogger({ logLevel: 'silent' });

/** A world of likes and favourites on two posts, persisted to PostgreSQL, then Redis emptied. */
async function lostWorld() {
  const { f, db } = pipeline;
  await createReadiness(f.redis, f.keys).markAllReady(); // a whole Redis, until the loss below
  const posts = [f.postIn(0), f.postIn(1)];
  for (let u = 1; u <= 12; u++) {
    for (const post of posts) {
      await f.set(u, post, u % 3 !== 0);
      if (u % 4 === 0) await f.set(u, post, true, 'FAV');
    }
  }
  const persister = pipeline.persister();
  for (const p of f.allPartitions) await persister.persist(await f.batchOf(p));
  const before = await Promise.all(posts.map((id) => f.factsOf(id)));
  await deleteKeys(f.prefix); // Redis loses everything under this deployment's prefix
  const parts = createRecoveryParts({
    redis: f.redis,
    keys: f.keys,
    stores: createStores(db),
    logger,
    eventLogs: { durableLogSettled: async () => true, durableLogWritten: async () => false },
    rebuildLockMs: 5000,
    viewsExactUpTo: 1000,
    pageSize: 1,
  });
  return { posts, before, parts };
}

describe('recovery', () => {
  it('can be interrupted and run again: it resumes where it stopped and ends exact', async () => {
    const { f } = pipeline;
    const { posts, before, parts } = await lostWorld();
    expect(await parts.readiness.notReady()).toEqual(f.allPartitions);

    await expect(
      parts.recovery.run({
        onProgress: (p) => {
          if (p.step === 'entities' && p.done === 1) throw new Error('interrupted');
        },
      }),
    ).rejects.toThrow('interrupted');
    expect(await parts.readiness.notReady()).toEqual(f.allPartitions); // still answered by PostgreSQL

    const resumed: RecoveryProgress[] = [];
    expect(await parts.recovery.run({ onProgress: (p) => resumed.push(p) })).toBe('recovered');
    expect(resumed[0]).toMatchObject({ step: 'entities', done: 1, total: 2 }); // not from zero
    expect(await parts.readiness.notReady()).toEqual([]);
    expect(await parts.recovery.run()).toBe('not needed');

    expect(await Promise.all(posts.map((id) => f.factsOf(id)))).toEqual(before);
    for (const [i, id] of posts.entries()) {
      expect((await f.countersOf(id))?.slice(1, 3)).toEqual([before[i]!.likes, before[i]!.favs]);
    }
  });

  it('is run by one process at a time: while another holds its lock, a run steps aside', async () => {
    const { f } = pipeline;
    const { parts } = await lostWorld();
    await f.redis.set(f.keys.recoveryLock(), 'another process', 'PX', 60_000);
    expect(await parts.recovery.run()).toBe('running elsewhere');
    expect(await parts.readiness.notReady()).toEqual(f.allPartitions);
    await f.redis.del(f.keys.recoveryLock()); // that process died; its lock is gone
    expect(await parts.recovery.run()).toBe('recovered');
    expect(await f.redis.exists(f.keys.recoveryLock())).toBe(0);
  });

  it('restores an entity before a write decides against it: an unlike after the loss is not lost', async () => {
    const { f } = pipeline;
    const { posts, before, parts } = await lostWorld();
    const relations = createRelationStore(f.redis, f.keys, { restore: (entity) => parts.restorer.restore(entity) });
    // User 1 liked posts[0] before the loss: the unlike must find that like and say it changed.
    const result = await relations.set({ userId: 1, postId: posts[0]!, authorId: 1, kind: 'LIKE', active: false });
    expect(result.changed).toBe(true);
    expect((await f.factsOf(posts[0]!)).likes).toBe(before[0]!.likes - 1);
    // The other post is not restored yet: Redis does not answer for it, PostgreSQL will.
    expect(await relations.viewerStates(1, [posts[0]!, posts[1]!])).toEqual([new Set(), null]);
    // Without a way to restore, a write is refused rather than decided against nothing.
    const bare = createRelationStore(f.redis, f.keys);
    await expect(bare.set({ userId: 2, postId: posts[1]!, authorId: 1, kind: 'LIKE', active: false })).rejects.toMatchObject({
      extensions: { code: 'INTERNAL_SERVER_ERROR', retryAfterMs: 1000 },
    });
  });
});
