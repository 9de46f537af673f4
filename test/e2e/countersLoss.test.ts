import { QueueEvents } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REBUILDS_PER_WINDOW } from '../../src/counters/rebuild.js';
import { REBUILD_QUEUE } from '../../src/jobs/rebuildJobs.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
let events: QueueEvents;
const rebuilt: { jobId: string; at: number }[] = [];

beforeAll(async () => {
  t = await startTestApp();
  events = new QueueEvents(REBUILD_QUEUE, { connection: { url: TEST_REDIS_URL }, prefix: t.app.keys.bullPrefix() });
  await events.waitUntilReady();
  events.on('completed', ({ jobId }) => rebuilt.push({ jobId, at: Date.now() }));
});
afterAll(async () => {
  await events.close();
  await t.stop();
});

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const READ = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes asOf } } }';

describe('counters deleted or truncated while likes keep arriving', () => {
  it('keeps reads exact, brings the packed counters back, and holds the rebuild rate limit', async () => {
    const postIds = await t.createPosts(3);
    const countersKey = (id: string) => t.app.keys.counters({ type: 'post', id: Number(id) });
    const acks = new Map<string, number[]>(postIds.map((id) => [id, []])); // client receive times
    const sent = new Map<string, number>(postIds.map((id) => [id, 0]));
    const violations: string[] = [];
    const stormEnds = Date.now() + 5000;

    const writer = async (worker: number) => {
      for (let n = 0; Date.now() < stormEnds; n++) {
        const postId = postIds[n % 3]!;
        const token = await t.token(10_000 + worker * 1000 + n);
        sent.set(postId, sent.get(postId)! + 1);
        const res = await t.gql(SET, { i: { postId, active: true } }, { token });
        if (res.data?.setLikeRelation.changed) acks.get(postId)!.push(Date.now());
      }
    };
    const vandal = async () => {
      for (let n = 0; Date.now() < stormEnds; n++) {
        const key = countersKey(postIds[n % 3]!);
        if (n % 2) await t.app.redis.del(key);
        else await t.app.redis.set(key, 'short');
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const reader = async () => {
      while (Date.now() < stormEnds) {
        const sentBefore = new Map(sent);
        const res = await t.gql(READ, { ids: postIds });
        for (const post of res.data.posts) {
          // Everything acknowledged before asOf must be counted; nothing not yet sent may be.
          const asOf = post.counts.asOf ? Date.parse(post.counts.asOf) : 0;
          const floor = acks.get(post.id)!.filter((at) => at < asOf).length;
          const ceiling = sent.get(post.id)!;
          if (post.counts.likes < floor || post.counts.likes > ceiling) {
            violations.push(
              `post ${post.id}: ${post.counts.likes} not in [${floor}, ${ceiling}] (sent before read ${sentBefore.get(post.id)})`,
            );
          }
        }
      }
    };
    await Promise.all([writer(0), writer(1), writer(2), writer(3), vandal(), reader(), reader()]);
    expect(violations).toEqual([]);

    // Afterwards: counters exist again and are exact.
    const expected = postIds.map((id) => acks.get(id)!.length);
    const lastAck = Math.max(...[...acks.values()].flat());
    const settled = await waitFor(
      () => t.gql(READ, { ids: postIds }),
      (r) => r.data.posts.every((p: any) => p.counts.asOf && Date.parse(p.counts.asOf) > lastAck),
      { what: 'counts after the storm', timeoutMs: 20_000 },
    );
    expect(settled.data.posts.map((p: any) => p.counts.likes)).toEqual(expected);
    await waitFor(
      () => Promise.all(postIds.map((id) => t.app.redis.strlen(countersKey(id)))),
      (l) => l.every((n) => n === 20),
      {
        what: 'all packed counters back',
        timeoutMs: 20_000,
      },
    );

    // The rate limit: at most 3 rebuilds per entity per window. A window is fixed (it starts at
    // its first rebuild), so any 10 s span holds at most two windows' worth, as seen from here.
    for (const id of postIds) {
      const times = rebuilt.filter((r) => r.jobId === `post-${id}`).map((r) => r.at);
      for (const start of times) {
        expect(times.filter((at) => at >= start && at < start + 10_000).length).toBeLessThanOrEqual(2 * REBUILDS_PER_WINDOW);
      }
    }
    expect(rebuilt.length).toBeGreaterThan(0);
  }, 60_000);
});
