import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packCounters } from '../../src/counters/packedCounters.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { spawnTsx } from '../support/process.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ PARTITIONS: '4', EVENT_RETENTION_MS: '3600000' });
});
afterAll(() => t.stop());

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const READ = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } } }';

const replay = (app: TestApp) =>
  spawnTsx('src/cli/replay.ts', [], {
    DATABASE_URL: app.db.url,
    REDIS_URL: app.app.config.redisUrl,
    REDIS_KEY_PREFIX: app.app.config.redisKeyPrefix,
    PARTITIONS: String(app.app.config.partitions),
    NODE_ENV: 'test',
  });

describe('npm run replay', () => {
  it('recomputes corrupt counters from the log and switches to them while writes continue', async () => {
    const ids = await t.createPosts(6);
    const tokens = await Promise.all(Array.from({ length: 25 }, (_, u) => t.token(400 + u)));
    await Promise.all(
      ids.flatMap((postId, i) =>
        tokens
          .slice(0, 4 + i * 3)
          .map((token, u) => t.gql(SET, { i: { postId, active: true, kind: u % 4 === 0 ? 'FAV' : 'LIKE' } }, { token })),
      ),
    );
    await Promise.all(ids.map((postId) => t.gql(SET, { i: { postId, active: false } }, { token: tokens[1] })));

    // Counters and the like facts both go bad: only the log still knows the truth.
    for (const id of ids.slice(0, 3)) {
      const post = { type: 'post' as const, id: Number(id) };
      await t.app.redis.set(t.app.keys.counters(post), packCounters([0, 7777, 5, 0, 0]));
      await t.app.redis.del(t.app.keys.chunkIndex('like', post), t.app.keys.arrayBlock('like', post, 0));
    }

    // Writes keep arriving during the replay.
    let writing = true;
    let extra = 0;
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        const res = await t.gql(SET, { i: { postId: ids[n % 6], active: true } }, { token: await t.token(9000 + n) });
        if (res.data.setLikeRelation.changed) extra += 1;
      }
    })();
    const run = replay(t);
    expect(await run.exited).toBe(0);
    writing = false;
    await writer;
    expect(run.output()).toContain('counters switched');

    // Expected from the facts PostgreSQL holds (the persister reads the same log).
    const expected = async () => {
      const rows = await t.app.db.relationFact.groupBy({ by: ['entityId', 'kind'], where: { active: true }, _count: { _all: true } });
      return ids.map((id) => ({
        likes: rows.find((r) => String(r.entityId) === id && r.kind === 'like')?._count._all ?? 0,
        favs: rows.find((r) => String(r.entityId) === id && r.kind === 'fav')?._count._all ?? 0,
      }));
    };
    const since = Date.now();
    const settled = await waitFor(
      async () => ({ read: await t.gql(READ, { ids }), want: await expected() }),
      ({ read, want }) =>
        read.data.posts.every((p: any, i: number) => Date.parse(p.counts.asOf) > since && p.counts.likes === want[i]!.likes),
      { what: 'replayed counts to settle', timeoutMs: 15_000 },
    );
    expect(settled.read.data.posts.map((p: any) => ({ likes: p.counts.likes, favs: p.counts.favs }))).toEqual(settled.want);
    expect(extra).toBeGreaterThan(0);
  }, 60_000);

  it('refuses when the log was trimmed: it would count only part of the history', async () => {
    const trimmed = await startTestApp({ EVENT_RETENTION_MS: '0' });
    try {
      const [postId] = await trimmed.createPosts(1);
      for (let u = 0; u < 5; u++) await trimmed.gql(SET, { i: { postId, active: true } }, { token: await trimmed.token(50 + u) });
      await waitFor(
        () => trimmed.app.redis.hget(trimmed.app.keys.meta(), 'history'),
        (h) => h === 'trimmed',
        { what: 'a trim', timeoutMs: 20_000 },
      );
      const run = replay(trimmed);
      expect(await run.exited).toBe(1);
      expect(run.output()).toContain('replay refused: the event log no longer holds the whole history');
    } finally {
      await trimmed.stop();
    }
  }, 40_000);
});
