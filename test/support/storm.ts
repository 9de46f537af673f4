// The like storm of the likes issue, shared by the Redis Streams, Cluster and Kafka runs: 300
// distinct users like (or favourite, or react to) one post at once over HTTP, 100 of them send
// the request twice (50 with an idempotency key, 50 without), then 50 undo it. Within 2 s of the
// last response the counts' asOf covers it and the count is exactly 250, every other count 0;
// every user's myState is right.
import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from './app.js';
import { waitFor } from './wait.js';

const SET_LIKE = 'mutation($input: SetLikeRelationInput!) { setLikeRelation(input: $input) { changed } }';
const SET_REACTION = 'mutation($input: SetReactionInput!) { setReaction(input: $input) { changed } }';
const READ = `query($id: ID!) { post(id: $id) {
  counts { likes favs asOf } reactionGroups { content count } myState { liked faved reactions }
} }`;

/** A like, a favourite, or a reaction by its content. */
export type StormKind = 'LIKE' | 'FAV' | { reaction: string };

interface Post {
  counts: { likes: number; favs: number; asOf: string | null };
  reactionGroups: { content: string; count: number }[];
  myState: { liked: boolean; faved: boolean; reactions: string[] };
}

/** How the storm sets `kind` and reads it back. */
function stormOf(kind: StormKind) {
  if (typeof kind === 'object') {
    return {
      mutation: SET_REACTION,
      input: { content: kind.reaction },
      changed: (data: any) => data.setReaction.changed as boolean,
      // Its group, and nothing else counted.
      counts: (post: Post) => ({ ...post.counts, asOf: undefined, groups: post.reactionGroups }),
      expected: (n: number) => ({ likes: 0, favs: 0, asOf: undefined, groups: n ? [{ content: kind.reaction, count: n }] : [] }),
      holds: (post: Post) => post.myState.reactions.includes(kind.reaction),
      others: (post: Post) => [post.myState.liked, post.myState.faved, post.myState.reactions.length > 1],
    };
  }
  const [own, other] = kind === 'LIKE' ? (['likes', 'favs'] as const) : (['favs', 'likes'] as const);
  return {
    mutation: SET_LIKE,
    input: { kind },
    changed: (data: any) => data.setLikeRelation.changed as boolean,
    counts: (post: Post) => ({ ...post.counts, asOf: undefined, groups: post.reactionGroups }),
    expected: (n: number) => ({ [own]: n, [other]: 0, asOf: undefined, groups: [] }),
    holds: (post: Post) => (kind === 'LIKE' ? post.myState.liked : post.myState.faved),
    others: (post: Post) => [kind === 'LIKE' ? post.myState.faved : post.myState.liked, post.myState.reactions.length > 0],
  };
}

export async function runLikeStorm(t: TestApp, kind: StormKind, userBase = 10_000) {
  const storm = stormOf(kind);
  const [postId] = await t.createPosts(1);
  const set = (token: string, input: Record<string, unknown>) =>
    t.gql(storm.mutation, { input: { postId, ...storm.input, ...input } }, { token });
  const read = async (token?: string) => (await t.gql(READ, { id: postId }, token ? { token } : {})).data.post as Post;
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
  const changed = responses.map((r) => storm.changed(r.data));
  const pairs = Array.from({ length: 100 }, (_, i) => [changed[2 * i], changed[2 * i + 1]]);
  expect(pairs.slice(0, 50).every(([a, b]) => a && b)).toBe(true);
  expect(pairs.slice(50).every(([a, b]) => a !== b)).toBe(true);
  expect(changed.slice(200).every(Boolean)).toBe(true);

  const unlikes = await Promise.all(tokens.slice(0, 50).map((token) => set(token, { active: false })));
  expect(unlikes.every((r) => storm.changed(r.data) === true)).toBe(true);
  const lastResponseAt = Date.now();

  // Within 2 s the counts promise (asOf) covers the last response, and they are exact.
  const post = await waitFor(
    () => read(),
    (p) => p.counts.asOf !== null && Date.parse(p.counts.asOf) > lastResponseAt,
    { timeoutMs: 2000, what: 'counts covering the last response' },
  );
  expect(storm.counts(post)).toEqual(storm.expected(250));

  const seen = await Promise.all(tokens.map((token) => read(token)));
  users.forEach((u, i) => {
    expect(storm.holds(seen[i]!), `user ${u}`).toBe(i >= 50);
  });
  expect(seen.every((p) => storm.others(p).every((held) => held === false))).toBe(true);
}
