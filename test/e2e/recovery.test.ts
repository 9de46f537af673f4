import type { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSplitOnOwnRedis, type TestApp } from '../support/app.js';
import { spawnTsx } from '../support/process.js';
import { persisterCaughtUp } from '../support/settle.js';
import { waitFor, waitUntil } from '../support/wait.js';

// Redis loses everything (FLUSHALL) while a split deployment runs (an API process and a
// worker); PostgreSQL keeps the facts. No one runs anything by hand.
let deployment: Awaited<ReturnType<typeof startSplitOnOwnRedis>>;
let t: TestApp;
let admin: Redis;

beforeAll(async () => {
  deployment = await startSplitOnOwnRedis({ PARTITIONS: '4' });
  ({ api: t, admin } = deployment);
}, 30_000);
afterAll(() => deployment?.stop());

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const PAGE = `query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes favs asOf } myState { liked faved } } }`;
const USERS = Array.from({ length: 30 }, (_, i) => 200 + i);

/** Every user's view of every post: counts (same for all) and their own state. */
async function snapshot(postIds: string[], tokens: string[]) {
  const views = await Promise.all(tokens.map((token) => t.gql(PAGE, { ids: postIds }, { token })));
  return {
    counts: views[0]!.data.posts.map((p: any) => ({ id: p.id, likes: p.counts.likes, favs: p.counts.favs })),
    states: views.map((v) => v.data.posts.map((p: any) => p.myState)),
    asOfs: views[0]!.data.posts.map((p: any) => p.counts.asOf),
  };
}

describe('recovery after Redis lost its data', () => {
  it('answers from PostgreSQL at once, decides writes against restored facts, and recovers by itself', async () => {
    const postIds = await t.createPosts(12);
    const tokens = await Promise.all(USERS.map((u) => t.token(u)));
    // A workload with likes, favourites and unlikes.
    await Promise.all(
      USERS.flatMap((_, u) =>
        postIds.flatMap((postId, i) => [
          ...((u + i) % 3 === 0 ? [t.gql(SET, { i: { postId, active: true } }, { token: tokens[u] })] : []),
          ...((u * i) % 7 === 1 ? [t.gql(SET, { i: { postId, active: true, kind: 'FAV' } }, { token: tokens[u] })] : []),
        ]),
      ),
    );
    await Promise.all(USERS.slice(0, 10).map((_, u) => t.gql(SET, { i: { postId: postIds[u]!, active: false } }, { token: tokens[u] })));
    const lastWrite = Date.now();
    await waitUntil(() => persisterCaughtUp(t, admin), { what: 'the persister to catch up' });
    await waitFor(
      () => snapshot(postIds, tokens.slice(0, 1)),
      (s) => s.asOfs.every((a: string | null) => a !== null && Date.parse(a) > lastWrite),
      { what: 'flushed counts' },
    );
    const before = await snapshot(postIds, tokens);
    expect(before.counts.some((c: any) => c.likes > 5)).toBe(true);

    await admin.flushall();
    // What running processes write by themselves must not make the empty Redis look whole: the
    // outbox trimmer's history mark, a flush publishing an asOf.
    await admin.hset(t.app.keys.meta(), 'history', 'trimmed');
    for (let p = 0; p < 4; p++) await admin.set(t.app.keys.flushed(p), String(Date.now()));

    // At once, before anyone noticed: the same answers, read from PostgreSQL, with no asOf —
    // never zeros from an empty Redis.
    const during = await snapshot(postIds, tokens);
    expect(during.counts).toEqual(before.counts);
    expect(during.states).toEqual(before.states);
    expect(during.asOfs.every((a: string | null) => a === null)).toBe(true);

    // Writes right after the loss are decided against the facts PostgreSQL kept: an unlike of
    // a like from before the loss changes it, a re-like of a like it kept does not.
    const liked = (u: number, p: number) => before.states[u][p].liked as boolean;
    const [u0, p0] = [USERS.findIndex((_, u) => liked(u, 0)), 0];
    const unlike = await t.gql(SET, { i: { postId: postIds[p0]!, active: false } }, { token: tokens[u0] });
    expect(unlike.data.setLikeRelation.changed).toBe(true);
    const relike = await t.gql(
      SET,
      { i: { postId: postIds[3]!, active: true } },
      { token: tokens[USERS.findIndex((_, u) => liked(u, 3))] },
    );
    expect(relike.data.setLikeRelation.changed).toBe(false);
    const after = structuredClone(before);
    after.states[u0][p0].liked = false;
    after.counts[p0].likes -= 1;

    // The worker recovers Redis by itself, and its job schedulers come back: counts flush again.
    const since = Date.now();
    const restored = await waitFor(
      () => snapshot(postIds, tokens),
      (s) => s.asOfs.every((a: string | null) => a !== null && Date.parse(a) > since),
      { what: 'counters served from Redis again', timeoutMs: 30_000 },
    );
    expect(restored.counts).toEqual(after.counts);
    expect(restored.states).toEqual(after.states);
    for (let p = 0; p < 4; p++) expect(await admin.exists(t.app.keys.ready(p))).toBe(1);

    // `npm run recover` finds nothing left to do.
    const recover = spawnTsx('src/cli/recover.ts', [], {
      DATABASE_URL: t.db.url,
      REDIS_URL: deployment.server.url,
      REDIS_KEY_PREFIX: t.app.config.redisKeyPrefix,
      PARTITIONS: '4',
      NODE_ENV: 'test',
    });
    expect(await recover.exited).toBe(0);
    expect(recover.output()).toMatch(/nothing to recover/);

    // The author's counters (exact in PostgreSQL, cached again) match every post's counts.
    const sum = (field: 'likes' | 'favs') => after.counts.reduce((n: number, c: any) => n + c[field], 0);
    const author = await waitFor(
      async () => (await t.gql('{ user(id: "1") { counts { posts likesReceived favsReceived asOf } } }')).data.user.counts,
      (c) => c.asOf !== null && Date.parse(c.asOf) > since && c.likesReceived === sum('likes'),
      { what: 'user counters after recovery', timeoutMs: 15_000 },
    );
    expect(author).toMatchObject({ posts: 12, likesReceived: sum('likes'), favsReceived: sum('favs') });
  }, 90_000);
});
