// Views of the entities a product owns: a type that counts views (ENTITY_TYPES' `views`, part
// of the default) takes recordEntityViews and shows `views` as a post does, with its owner as
// the author; a type that does not refuses them.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

// The registry is built from the process's settings at import: set them before anything loads it.
vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'comment;clip:like:unowned';
});
const SERVICE_SECRET = 'service-secret-0123456789abcdef0123456789';
const OWNER = 7;

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ ENTITY_TYPES: process.env.ENTITY_TYPES!, SERVICE_SECRET });
  const service = await t.app.deps.auth.signService('blog');
  const entities = [
    ...['c-1', 'c-2'].map((id) => ({ type: 'comment', id, ownerId: String(OWNER), version: '1' })),
    { type: 'clip', id: 'k-1', version: '1' },
  ];
  const res = await t.gql(
    `mutation($e: [EntityRegistration!]!) { registerEntities(input: { entities: $e }) { applied } }`,
    { e: entities },
    { token: service },
  );
  expect(res.data.registerEntities.applied).toBe(3);
});
afterAll(() => t.stop());

const RECORD = `mutation($type: String!, $ids: [ID!]!) {
  recordEntityViews(input: { type: $type, ids: $ids }) { views { counted entity { id } } }
}`;
const READ = `query($ids: [ID!]!) { entities(type: "comment", ids: $ids) { id ... on Comment { views { total unique asOf } } } }`;

describe('views of entities a product owns', () => {
  it('counts each viewer once per window, not the owner, and answers NOT_FOUND for an unknown id alone', async () => {
    const viewers = await Promise.all([21, 22, 23].map((u) => t.token(u)));
    for (const token of [...viewers, viewers[0]!]) {
      const res = await t.gql(RECORD, { type: 'comment', ids: ['c-1', 'c-2'] }, { token });
      expect(res.errors).toBeUndefined();
    }
    const own = await t.gql(RECORD, { type: 'comment', ids: ['c-1', 'nope'] }, { token: await t.token(OWNER) });
    expect(own.data.recordEntityViews.views).toEqual([{ counted: false, entity: { id: 'c-1' } }, null]);
    expect(own.errors?.map((e) => [e.extensions?.code, e.path])).toEqual([['NOT_FOUND', ['recordEntityViews', 'views', 1]]]);

    const since = Date.now();
    const read = await waitFor(
      () => t.gql(READ, { ids: ['c-1', 'c-2'] }),
      (r) => r.data?.entities.every((e: { views: { asOf: string | null } }) => e.views.asOf && Date.parse(e.views.asOf) > since),
      { what: 'the views counted' },
    );
    expect(
      read.data.entities.map((e: { id: string; views: { total: number; unique: number } }) => [e.id, e.views.total, e.views.unique]),
    ).toEqual([
      ['c-1', 3, 3],
      ['c-2', 3, 3],
    ]);
  });

  it('refuses a type that counts no views, and one that is not the product’s', async () => {
    const token = await t.token(21);
    for (const type of ['clip', 'post', 'photo']) {
      expect(errorCodes(await t.gql(RECORD, { type, ids: ['k-1'] }, { token }))).toEqual(['BAD_USER_INPUT']);
    }
    const clip = await t.gql('{ entities(type: "clip", ids: ["k-1"]) { ... on Clip { views { total } } } }');
    expect(errorCodes(clip)).toEqual(['BAD_USER_INPUT']);
    expect(clip.errors?.[0]?.message).toMatch(/Cannot query field "views" on type "Clip"/);
  });
});
