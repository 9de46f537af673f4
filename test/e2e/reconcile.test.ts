import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packCounters } from '../../src/counters/packedCounters.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
let worker: TestApp | null = null;
let scheduled: TestApp | null = null;
beforeAll(async () => {
  // The API and a worker apart, so the scheduled run below has no other worker to take it.
  t = await startTestApp({ ROLE: 'api' });
  // The default 5-minute interval: only the runs this test starts happen while drift is planted.
  worker = await startTestApp({ ROLE: 'worker', RECONCILE_SAMPLE: '50' }, { sharing: t });
});
afterAll(async () => {
  await scheduled?.stop();
  await worker?.stop();
  await t.stop();
});

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const REACT = 'mutation($i: SetReactionInput!) { setReaction(input: $i) { changed } }';
const READ = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes asOf } reactionGroups { content count } } }';

describe('reconciliation', () => {
  it('finds and repairs counter drift, reports fact drift, and raises no false alarm while writes go on', async () => {
    const ids = await t.createPosts(8);
    const tokens = await Promise.all(Array.from({ length: 20 }, (_, u) => t.token(300 + u)));
    await Promise.all(
      ids.flatMap((postId, i) => tokens.slice(0, 5 + i).map((token) => t.gql(SET, { i: { postId, active: true } }, { token }))),
    );
    // The first post also has reactions: the planted counters below lose them too.
    await Promise.all(
      tokens.slice(0, 3).map((token) => t.gql(REACT, { i: { postId: ids[0], content: 'HEART', active: true } }, { token })),
    );
    const written = Date.now();
    await waitFor(
      () => t.gql(READ, { ids }),
      (r) => r.data.posts.every((p: any) => p.counts.asOf && Date.parse(p.counts.asOf) > written),
      { what: 'flushed' },
    );
    await waitFor(
      () => t.app.db.relationFact.count(),
      (n) => n === ids.reduce((sum, _, i) => sum + 5 + i, 3),
      { what: 'persisted' },
    );

    // Plant drift: wrong counters on one post, a fact PostgreSQL lost on another.
    const [wrongCounters, lostFact] = [Number(ids[0]), Number(ids[1])];
    await t.app.redis.set(t.app.keys.counters({ type: 'post', id: wrongCounters }), packCounters([0, 99, 0, 0, 0]));
    await t.app.db.relationFact.delete({
      where: { userId_entityType_entityId_kind: { userId: 300, entityType: 'post', entityId: lostFact, kind: 'like' } },
    });

    // Writes keep arriving on the other posts while reconciliation runs.
    let writing = true;
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        await t.gql(SET, { i: { postId: ids[2 + (n % 6)], active: n % 3 !== 0 } }, { token: tokens[n % 20] });
      }
    })();
    const report = await worker!.app.workers!.reconciler.run();
    writing = false;
    await writer;

    expect(report.checked).toBeGreaterThanOrEqual(ids.length - 1);
    expect(report.counterDrift).toEqual([{ type: 'post', id: wrongCounters }]);
    expect(report.factDrift).toEqual([{ type: 'post', id: lostFact }]);

    // The counter drift is repaired through the rebuild job.
    const repaired = await waitFor(
      () => t.gql(READ, { ids: [ids[0]] }),
      (r) => r.data.posts[0].counts.likes === 5,
      { what: 'repaired counters' },
    );
    expect(repaired.data.posts[0].counts.likes).toBe(5);
    expect(repaired.data.posts[0].reactionGroups).toEqual([{ content: 'HEART', count: 3 }]);

    // A worker configured to reconcile every second runs it by itself; the metrics say what it found.
    await worker!.stop();
    worker = null;
    scheduled = await startTestApp({ ROLE: 'worker', RECONCILE_INTERVAL_MS: '1000' }, { sharing: t });
    const metrics = await waitFor(
      async () => (await fetch(`${scheduled!.url}/metrics`)).text(),
      (text) => /tally_reconcile_drift_total\{kind="facts"\} [1-9]/.test(text),
      { what: 'a scheduled run', timeoutMs: 15_000 },
    );
    expect(metrics).toMatch(/tally_reconcile_checked_total \d+/);
  }, 60_000);
});
