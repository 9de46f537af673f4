import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

// The registry is built from the process's settings at import: set them before anything loads it.
vi.hoisted(() => {
  process.env.REACTIONS = 'LIKE:👍,LOVE:❤️,WOW:😮';
  process.env.REACTIONS_PER_USER = 'one';
});

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ REACTIONS: process.env.REACTIONS!, REACTIONS_PER_USER: 'one' });
});
afterAll(() => t.stop());

const REACT = `mutation($input: SetReactionInput!) {
  setReaction(input: $input) { content active changed post { myState { reactions } } }
}`;
const READ = 'query($id: ID!) { post(id: $id) { counts { asOf } reactionGroups { content count viewerHasReacted } } }';

describe('one reaction per user (REACTIONS_PER_USER=one) with a deployment’s own list', () => {
  it('serves the configured kinds and refuses the default ones', async () => {
    expect((await t.gql('{ reactionKinds { content emoji } }')).data.reactionKinds).toEqual([
      { content: 'LIKE', emoji: '👍' },
      { content: 'LOVE', emoji: '❤️' },
      { content: 'WOW', emoji: '😮' },
    ]);
    const [postId] = await t.createPosts(1, 1);
    const res = await t.gql(REACT, { input: { postId, content: 'HEART', active: true } }, { token: await t.token(701) });
    expect(errorCodes(res)).toEqual(['BAD_USER_INPUT']);
    expect(res.errors![0]!.message).toContain('LIKE, LOVE, WOW');
  });

  it('replaces the old reaction in the same step, and the counts say so', async () => {
    const [postId] = await t.createPosts(1, 1);
    const [ada, bob] = [await t.token(702), await t.token(703)];
    const react = (token: string, content: string, active = true) =>
      t.gql(REACT, { input: { postId, content, active } }, { token }).then((r) => r.data.setReaction);
    expect(await react(ada, 'LIKE')).toMatchObject({ changed: true, post: { myState: { reactions: ['LIKE'] } } });
    expect(await react(ada, 'WOW')).toMatchObject({ changed: true, post: { myState: { reactions: ['WOW'] } } });
    expect(await react(ada, 'WOW')).toMatchObject({ changed: false });
    await react(bob, 'LIKE');
    // Removing a reaction one does not hold leaves the held one.
    expect(await react(bob, 'WOW', false)).toMatchObject({ changed: false, post: { myState: { reactions: ['LIKE'] } } });

    const since = Date.now();
    const post = await waitFor(
      async () => (await t.gql(READ, { id: postId }, { token: ada })).data.post,
      (p) => p.counts.asOf !== null && Date.parse(p.counts.asOf) > since,
      { what: 'counts after the changes' },
    );
    expect(post.reactionGroups).toEqual([
      { content: 'LIKE', count: 1, viewerHasReacted: false },
      { content: 'WOW', count: 1, viewerHasReacted: true },
    ]);
  });
});
