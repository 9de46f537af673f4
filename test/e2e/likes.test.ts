import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { runLikeStorm } from '../support/storm.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
let authorToken: string;

beforeAll(async () => {
  t = await startTestApp();
  authorToken = await t.token(1, { name: 'Author' });
});
afterAll(() => t.stop());

const SET = `mutation($input: SetLikeRelationInput!) {
  setLikeRelation(input: $input) { kind active changed post { id myState { liked faved } } }
}`;
const READ = 'query($id: ID!) { post(id: $id) { counts { likes favs asOf } myState { liked faved } } }';

async function newPost(): Promise<string> {
  const res = await t.gql('mutation { createPost(input: { title: "hot", body: "post" }) { id } }', {}, { token: authorToken });
  return res.data.createPost.id;
}

const set = (token: string, input: Record<string, unknown>) => t.gql(SET, { input }, { token });
const read = (id: string, token?: string) => t.gql(READ, { id }, token ? { token } : {});
const countsOf = async (id: string) => (await read(id)).data.post.counts as { likes: number; favs: number; asOf: string | null };
/** Counts that include every change acknowledged before `since` (the asOf promise). */
const countsAfter = (id: string, since: number, timeoutMs = 5000) =>
  waitFor(
    () => countsOf(id),
    (c) => c.asOf !== null && Date.parse(c.asOf) > since,
    { timeoutMs, what: `asOf after ${since}` },
  );
const outboxLength = () =>
  Promise.all(Array.from({ length: t.app.keys.partitions }, (_, p) => t.app.redis.xlen(t.app.keys.outbox(p)))).then((l) =>
    l.reduce((a, b) => a + b, 0),
  );

describe('setLikeRelation under a storm of concurrent users', () => {
  it.each(['LIKE', 'FAV'] as const)('counts %s exactly: 300 like (100 twice), 50 unlike', (kind) => runLikeStorm(t, kind), 60_000);
  it('counts a reaction exactly: 300 react (100 twice), 50 take it back', () => runLikeStorm(t, { reaction: 'ROCKET' }, 20_000), 60_000);
});

describe('setLikeRelation semantics', () => {
  it('unliking what was never liked changes nothing and never goes negative', async () => {
    const postId = await newPost();
    const token = await t.token(501);
    const before = await outboxLength();
    const res = await set(token, { postId, active: false });
    expect(res.data.setLikeRelation).toMatchObject({ active: false, changed: false, post: { myState: { liked: false } } });
    expect(await outboxLength()).toBe(before);

    await set(token, { postId, active: false, kind: 'FAV' });
    await set(token, { postId, active: true });
    await set(token, { postId, active: false });
    await set(token, { postId, active: false });
    expect(await countsAfter(postId, Date.now())).toMatchObject({ likes: 0, favs: 0 });
  });

  it('takes the desired state, not a toggle: liking twice keeps one like', async () => {
    const postId = await newPost();
    const token = await t.token(502);
    expect((await set(token, { postId, active: true })).data.setLikeRelation.changed).toBe(true);
    expect((await set(token, { postId, active: true })).data.setLikeRelation.changed).toBe(false);
    expect((await countsAfter(postId, Date.now())).likes).toBe(1);
  });

  it('refuses missing, deleted and malformed posts, and anonymous callers', async () => {
    const token = await t.token(503);
    expect(errorCodes(await set(token, { postId: '987654321', active: true }))).toEqual(['NOT_FOUND']);
    const postId = await newPost();
    await t.gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id: postId }, { token: authorToken });
    expect(errorCodes(await set(token, { postId, active: true }))).toEqual(['NOT_FOUND']);
    expect(errorCodes(await set(token, { postId: 'abc', active: true }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql(SET, { input: { postId: '1', active: true } }))).toEqual(['UNAUTHENTICATED']);
    expect(errorCodes(await set(token, { postId: '1', active: true, kind: 'LOVE' }))).toEqual(['BAD_USER_INPUT']);
  });

  it('works for sparse user ids on one post (1 and 10^12)', async () => {
    const postId = await newPost();
    const [low, high] = [await t.token(1), await t.token(1_000_000_000_000)];
    await set(low, { postId, active: true });
    await set(high, { postId, active: true });
    expect((await read(postId, low)).data.post.myState.liked).toBe(true);
    expect((await read(postId, high)).data.post.myState.liked).toBe(true);
    expect((await read(postId, await t.token(2))).data.post.myState.liked).toBe(false);
    expect((await countsAfter(postId, Date.now())).likes).toBe(2);
  });
});

describe('idempotency keys', () => {
  it('replays the first result for a reused key and changes nothing', async () => {
    const postId = await newPost();
    const token = await t.token(601);
    const key = randomUUID();
    const first = await set(token, { postId, active: true, idempotencyKey: key });
    expect(first.data.setLikeRelation.changed).toBe(true);
    // The user unlikes with a new key, then an old retry of the like arrives.
    await set(token, { postId, active: false, idempotencyKey: randomUUID() });
    const retry = await set(token, { postId, active: true, idempotencyKey: key });
    expect(retry.data.setLikeRelation).toMatchObject({ changed: true, active: true });
    // ...and does not like the post again.
    expect((await read(postId, token)).data.post.myState.liked).toBe(false);
  });

  it('is CONFLICT when a key is reused for a different request, and nothing changes', async () => {
    const [postA, postB] = [await newPost(), await newPost()];
    const token = await t.token(602);
    const key = randomUUID();
    await set(token, { postId: postA, active: true, idempotencyKey: key });
    const before = await outboxLength();
    expect(errorCodes(await set(token, { postId: postA, active: false, idempotencyKey: key }))).toEqual(['CONFLICT']);
    expect(errorCodes(await set(token, { postId: postA, active: true, kind: 'FAV', idempotencyKey: key }))).toEqual(['CONFLICT']);
    expect(errorCodes(await set(token, { postId: postB, active: true, idempotencyKey: key }))).toEqual(['CONFLICT']);
    expect(await outboxLength()).toBe(before);
    expect((await read(postA, token)).data.post.myState).toEqual({ liked: true, faved: false });
    expect((await read(postB, token)).data.post.myState).toEqual({ liked: false, faved: false });
  });

  it('scopes keys to the user: another user reusing the key is independent', async () => {
    const postId = await newPost();
    const key = 'shared-key';
    const a = await set(await t.token(603), { postId, active: true, idempotencyKey: key });
    const b = await set(await t.token(604), { postId, active: true, idempotencyKey: key });
    expect(a.data.setLikeRelation.changed).toBe(true);
    expect(b.data.setLikeRelation.changed).toBe(true);
    expect((await countsAfter(postId, Date.now())).likes).toBe(2);
  });

  it('accepts 255 characters and refuses 256 or none with BAD_USER_INPUT', async () => {
    const postId = await newPost();
    const token = await t.token(605);
    expect((await set(token, { postId, active: true, idempotencyKey: 'k'.repeat(255) })).errors).toBeUndefined();
    expect(errorCodes(await set(token, { postId, active: false, idempotencyKey: 'k'.repeat(256) }))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await set(token, { postId, active: false, idempotencyKey: '' }))).toEqual(['BAD_USER_INPUT']);
    expect((await read(postId, token)).data.post.myState.liked).toBe(true);
  });

  it('keeps a small record of a long key: its digest, not its text', async () => {
    const postId = await newPost();
    const key = '𝄞'.repeat(255); // 1,020 bytes of UTF-8
    expect((await set(await t.token(606), { postId, active: true, idempotencyKey: key })).errors).toBeUndefined();
    const records = [t.app.keys.idempotency({ type: 'post', id: Number(postId) }, 606, key), t.app.keys.idempotencyClaim(606, key)];
    for (const record of records) {
      expect(record).not.toContain('𝄞');
      expect(await t.app.redis.exists(record)).toBe(1);
      expect(await t.app.redis.call('MEMORY', 'USAGE', record)).toBeLessThan(200);
    }
    // The retry finds it.
    expect((await set(await t.token(606), { postId, active: true, idempotencyKey: key })).data.setLikeRelation.changed).toBe(true);
  });
});
