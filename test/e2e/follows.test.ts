import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

const FOLLOW = 'mutation($i: SetFollowRelationInput!) { setFollowRelation(input: $i) { changed active user { id followedByViewer } } }';
const COUNTS = 'query($id: ID!) { user(id: $id) { counts { followings followers posts likesReceived favsReceived asOf } } }';
const follow = (token: string, userId: number, active = true, idempotencyKey?: string) =>
  t.gql(FOLLOW, { i: { userId: String(userId), active, ...(idempotencyKey && { idempotencyKey }) } }, { token });
const countsOf = async (id: number) => (await t.gql(COUNTS, { id: String(id) })).data.user.counts;
/** Counts whose asOf covers everything acknowledged before `since`. */
const countsAfter = (id: number, since: number) =>
  waitFor(
    () => countsOf(id),
    (c) => c.asOf !== null && Date.parse(c.asOf) > since,
    { what: `user ${id} counts after ${since}`, timeoutMs: 10_000 },
  );

describe('setFollowRelation', () => {
  it("follows and unfollows with absolute state, and both users' counters move", async () => {
    const [a, b] = [await t.token(101), await t.token(102)];
    await t.gql('{ viewer { id } }', {}, { token: b }); // user 102 exists
    const first = await follow(a, 102);
    expect(first.data.setFollowRelation).toEqual({ changed: true, active: true, user: { id: '102', followedByViewer: true } });
    expect((await follow(a, 102)).data.setFollowRelation.changed).toBe(false);
    expect(await countsAfter(102, Date.now())).toMatchObject({ followers: 1, followings: 0 });
    expect(await countsAfter(101, Date.now())).toMatchObject({ followers: 0, followings: 1 });
    expect((await follow(a, 102, false)).data.setFollowRelation).toMatchObject({ changed: true, user: { followedByViewer: false } });
    expect(await countsAfter(102, Date.now())).toMatchObject({ followers: 0 });
  });

  it('refuses following yourself, unknown users and anonymous callers', async () => {
    const token = await t.token(103);
    expect(errorCodes(await follow(token, 103))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await follow(token, 987654))).toEqual(['NOT_FOUND']);
    expect(errorCodes(await t.gql(FOLLOW, { i: { userId: '1', active: true } }))).toEqual(['UNAUTHENTICATED']);
  });

  it('replays a reused idempotency key and refuses it for another request', async () => {
    const [a] = [await t.token(104), await t.token(105)];
    await t.gql('{ viewer { id } }', {}, { token: await t.token(105) });
    await t.gql('{ viewer { id } }', {}, { token: await t.token(106) });
    const key = randomUUID();
    expect((await follow(a, 105, true, key)).data.setFollowRelation.changed).toBe(true);
    expect((await follow(a, 105, true, key)).data.setFollowRelation.changed).toBe(true); // the first result
    expect(errorCodes(await follow(a, 106, true, key))).toEqual(['CONFLICT']);
  });
});
