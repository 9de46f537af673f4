import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';

let t: TestApp;
let alice: string;
let bob: string;

beforeAll(async () => {
  t = await startTestApp();
  alice = await t.token(11, { name: 'Alice' });
  bob = await t.token(12, { name: 'Bob' });
});
afterAll(() => t.stop());

const CREATE = 'mutation($input: CreatePostInput!) { createPost(input: $input) { id title body createdAt author { id name } } }';
const create = (token: string, title = 'hello', body = 'world') => t.gql(CREATE, { input: { title, body } }, { token });
const createId = async (token: string, title?: string) => (await create(token, title)).data.createPost.id as string;

describe('createPost', () => {
  it('publishes a post by the viewer', async () => {
    const res = await create(alice, 'First post', 'Body text');
    expect(res.errors).toBeUndefined();
    expect(res.data.createPost).toMatchObject({ title: 'First post', body: 'Body text', author: { id: '11', name: 'Alice' } });
    expect(Date.now() - Date.parse(res.data.createPost.createdAt)).toBeLessThan(60_000);
  });

  it('accepts the limits exactly: 200-char title, 10,000-char body', async () => {
    const res = await create(alice, 't'.repeat(200), 'b'.repeat(10_000));
    expect(res.errors).toBeUndefined();
  });

  it.each([
    ['an empty title', '', 'b'],
    ['a blank title', '   ', 'b'],
    ['a 201-char title', 't'.repeat(201), 'b'],
    ['a 10,001-char body', 't', 'b'.repeat(10_001)],
    ['a NUL in the body', 't', 'a\u0000b'],
  ])('refuses %s with BAD_USER_INPUT and stores nothing', async (_, title, body) => {
    const before = await t.gql('{ feed(first: 1) { edges { node { id } } } }');
    const res = await create(alice, title, body);
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    const after = await t.gql('{ feed(first: 1) { edges { node { id } } } }');
    expect(after.data).toEqual(before.data);
  });
});

describe('post and posts', () => {
  it('returns posts in the order asked, with null for missing ones', async () => {
    const a = await createId(alice, 'a');
    const b = await createId(bob, 'b');
    const res = await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { id title } }', { ids: [b, '999999', a] });
    expect(res.data.posts).toEqual([{ id: b, title: 'b' }, null, { id: a, title: 'a' }]);
    const one = await t.gql('query($id: ID!) { post(id: $id) { id } }', { id: a });
    expect(one.data.post).toEqual({ id: a });
  });

  it('accepts 100 ids and refuses 101', async () => {
    const ids = Array.from({ length: 100 }, (_, i) => String(i + 1));
    const ok = await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { id } }', { ids });
    expect(ok.errors).toBeUndefined();
    expect(ok.data.posts).toHaveLength(100);
    const tooMany = await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { id } }', { ids: [...ids, '101'] });
    expect(errorCodes(tooMany)).toEqual(['BAD_USER_INPUT']);
  });

  it.each(['0', '-1', 'abc', '1.5', '9007199254740992'])('refuses id %j with BAD_USER_INPUT', async (id) => {
    const res = await t.gql('query($id: ID!) { post(id: $id) { id } }', { id });
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    const user = await t.gql('query($id: ID!) { user(id: $id) { id } }', { id });
    expect(errorCodes(user)).toEqual(['BAD_USER_INPUT']);
  });

  it('finds users by id and returns null for unknown ones', async () => {
    const res = await t.gql('{ known: user(id: "11") { id name } unknown: user(id: "424242") { id } }');
    expect(res.data).toEqual({ known: { id: '11', name: 'Alice' }, unknown: null });
  });
});

describe('deletePost', () => {
  it('lets only the author delete, then hides the post from every read', async () => {
    const id = await createId(alice, 'to delete');
    const DELETE = 'mutation($id: ID!) { deletePost(id: $id) { id } }';

    const byBob = await t.gql(DELETE, { id }, { token: bob });
    expect(errorCodes(byBob)).toEqual(['FORBIDDEN']);
    expect((await t.gql('query($id: ID!) { post(id: $id) { id } }', { id })).data.post).toEqual({ id });

    const byAlice = await t.gql(DELETE, { id }, { token: alice });
    expect(byAlice.data.deletePost).toEqual({ id });

    expect((await t.gql('query($id: ID!) { post(id: $id) { id } }', { id })).data.post).toBeNull();
    expect((await t.gql('query($ids: [ID!]!) { posts(ids: $ids) { id } }', { ids: [id] })).data.posts).toEqual([null]);
    const feed = await t.gql('{ feed(first: 100) { edges { node { id } } } }');
    expect(feed.data.feed.edges.map((e: any) => e.node.id)).not.toContain(id);

    const again = await t.gql(DELETE, { id }, { token: alice });
    expect(errorCodes(again)).toEqual(['NOT_FOUND']);
  });

  it('is NOT_FOUND for a post that never existed', async () => {
    const res = await t.gql('mutation { deletePost(id: "987654") { id } }', {}, { token: alice });
    expect(errorCodes(res)).toEqual(['NOT_FOUND']);
  });
});
