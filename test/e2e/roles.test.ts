import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { outboxGroups } from '../support/settle.js';
import { waitFor } from '../support/wait.js';

let api: TestApp;
let worker: TestApp | null = null;

beforeAll(async () => {
  api = await startTestApp({ ROLE: 'api' });
});
afterAll(async () => {
  await worker?.stop();
  await api.stop();
});

const READ = 'query($id: ID!) { post(id: $id) { counts { likes asOf } } }';

describe('ROLE=api and ROLE=worker', () => {
  it('split the work: the API writes facts and events, only a worker turns them into counts', async () => {
    const token = await api.token(5);
    const postId = (await api.gql('mutation { createPost(input: { title: "t", body: "b" }) { id } }', {}, { token })).data.createPost.id;
    for (const user of [11, 12, 13]) {
      await api.gql(
        'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
        { id: postId },
        { token: await api.token(user) },
      );
    }
    const writtenAt = Date.now();
    // No worker: the events wait in the outbox, which no consumer group reads (so nothing can
    // count them, however long one waits), and the counts say so (no asOf yet).
    const outboxes = await outboxGroups(api);
    expect(outboxes.some((groups) => groups !== null)).toBe(true);
    expect(outboxes.flatMap((groups) => groups ?? [])).toEqual([]);
    expect((await api.gql(READ, { id: postId })).data.post.counts).toEqual({ likes: 0, asOf: null });

    worker = await startTestApp({ ROLE: 'worker' }, { sharing: api });
    expect((await fetch(`${worker.url}/graphql`, { method: 'POST' })).status).toBe(404);
    expect((await fetch(`${worker.url}/readyz`)).status).toBe(200);
    const counts = await waitFor(
      async () => (await api.gql(READ, { id: postId })).data.post.counts,
      (c) => c.asOf !== null && Date.parse(c.asOf) > writtenAt,
      { what: 'the worker to fold the counts' },
    );
    expect(counts.likes).toBe(3);
  });

  it('refuses to start with another partition count than the data was written with', async () => {
    await expect(startTestApp({ PARTITIONS: '7' }, { sharing: api })).rejects.toThrow(/PARTITIONS=7.*16 partitions/);
  });
});
