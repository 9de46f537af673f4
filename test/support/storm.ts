// The like storm of the likes issue, shared by the Redis Streams and Kafka runs: 300 distinct
// users like one post at once over HTTP, 100 of them send the request twice (50 with an
// idempotency key, 50 without), then 50 unlike. Within 2 s of the last response the counts'
// asOf covers it and the count is exactly 250; every user's myState is right.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { waitFor } from './wait.js';

const SET = `mutation($input: SetLikeRelationInput!) {
  setLikeRelation(input: $input) { changed }
}`;
const READ = 'query($id: ID!) { post(id: $id) { counts { likes favs asOf } myState { liked faved } } }';

export async function runLikeStorm(t: TestApp, kind: 'LIKE' | 'FAV', userBase = 10_000) {
  const [postId] = await t.createPosts(1);
  const set = (token: string, input: Record<string, unknown>) => t.gql(SET, { input: { postId, kind, ...input } }, { token });
  const read = (token?: string) => t.gql(READ, { id: postId }, token ? { token } : {});
  const users = Array.from({ length: 300 }, (_, i) => userBase + i);
  const tokens = await Promise.all(users.map((u) => t.token(u)));

  const requests = users.flatMap((_, i) => {
    const input = { active: true, ...(i < 50 && { idempotencyKey: randomUUID() }) };
    return i < 100 ? [set(tokens[i]!, input), set(tokens[i]!, input)] : [set(tokens[i]!, input)];
  });
  const responses = await Promise.all(requests);
  expect(responses.flatMap((r) => r.errors ?? [])).toEqual([]);
  // Each like changed the fact once: a keyed retry replays that first result, an unkeyed
  // retry finds the fact already set.
  const changed = responses.map((r) => r.data.setLikeRelation.changed as boolean);
  const pairs = Array.from({ length: 100 }, (_, i) => [changed[2 * i], changed[2 * i + 1]]);
  expect(pairs.slice(0, 50).every(([a, b]) => a && b)).toBe(true);
  expect(pairs.slice(50).every(([a, b]) => a !== b)).toBe(true);
  expect(changed.slice(200).every(Boolean)).toBe(true);

  const unlikes = await Promise.all(tokens.slice(0, 50).map((token) => set(token, { active: false })));
  expect(unlikes.every((r) => r.data.setLikeRelation.changed === true)).toBe(true);
  const lastResponseAt = Date.now();

  // Within 2 s the counts promise (asOf) covers the last response, and they are exact.
  const counts = await waitFor(
    async () => (await read()).data.post.counts as { likes: number; favs: number; asOf: string | null },
    (c) => c.asOf !== null && Date.parse(c.asOf) > lastResponseAt,
    { timeoutMs: 2000, what: 'counts covering the last response' },
  );
  expect(counts[kind === 'LIKE' ? 'likes' : 'favs']).toBe(250);
  expect(counts[kind === 'LIKE' ? 'favs' : 'likes']).toBe(0);

  const states = await Promise.all(tokens.map(async (token) => (await read(token)).data.post.myState));
  const own = kind === 'LIKE' ? 'liked' : 'faved';
  users.forEach((u, i) => {
    expect(states[i][own], `user ${u}`).toBe(i >= 50);
  });
  expect(states.every((s) => s[kind === 'LIKE' ? 'faved' : 'liked'] === false)).toBe(true);
}
