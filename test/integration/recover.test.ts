import { describe, expect, it } from 'vitest';
import { createUserCounters } from '../../src/counters/userCounters.js';
import { createFactStore } from '../../src/db/facts.js';
import { createUserCounterStore } from '../../src/db/userCounters.js';
import { createLogger } from '../../src/log.js';
import { createRecovery, type RecoveryProgress } from '../../src/recovery/recover.js';
import { usePipelineWithDb } from '../support/pipelineWithDb.js';
import { deleteKeys } from '../support/redis.js';

const pipeline = usePipelineWithDb();
const logger = createLogger({ logLevel: 'silent' });

describe('recovery', () => {
  it('can be interrupted and run again: it resumes where it stopped and ends exact', async () => {
    const { f, db } = pipeline;
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

    const facts = createFactStore(db);
    const userStore = createUserCounterStore(db);
    const userCounters = createUserCounters({ redis: f.redis, keys: f.keys, store: userStore });
    const recovery = createRecovery({ redis: f.redis, keys: f.keys, facts, userStore, userCounters, logger, pageSize: 5 });
    const seen: RecoveryProgress[] = [];
    let pages = 0;
    await expect(
      recovery.run({
        onProgress: (p) => {
          seen.push(p);
          if (p.step === 'facts' && p.done > 0 && ++pages === 2) throw new Error('interrupted');
        },
      }),
    ).rejects.toThrow('interrupted');
    expect(await f.redis.exists(f.keys.recovering())).toBe(1); // reads stay on PostgreSQL

    const resumed: RecoveryProgress[] = [];
    await recovery.run({ onProgress: (p) => resumed.push(p) });
    expect(resumed[0]).toMatchObject({ step: 'facts', done: 10 }); // not from zero
    expect(resumed.find((p) => p.step === 'facts' && p.done === p.total)).toBeDefined();
    expect(await f.redis.exists(f.keys.recovering())).toBe(0);

    expect(await Promise.all(posts.map((id) => f.factsOf(id)))).toEqual(before);
    for (const [i, id] of posts.entries()) {
      expect((await f.sdsOf(id))?.slice(1, 3)).toEqual([before[i]!.likes, before[i]!.favs]);
    }
  });
});
