import { type ExecutionResult, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { KINDS } from '../../src/domain/kinds.js';
import { LIKE } from '../../src/domain/relations.js';
import type { GraphQLContext } from '../../src/graphql/context.js';
import { createSchema } from '../../src/graphql/schema.js';
import { createSharedSubscribe, shareKey } from '../../src/graphql/sharedSubscribe.js';
import type { LivePost } from '../../src/live/liveCounts.js';
import { LiveStream } from '../../src/live/liveStream.js';

const HEART = KINDS.reaction('HEART')!;
const THUMBS_UP = KINDS.reaction('THUMBS_UP')!;

const schema = createSchema();
const WATCH = 'subscription W($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id __typename counts { likes favs asOf } } }';
const WITH_STATE = 'subscription S($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id myState { liked } } }';
const keyOf = (query: string, variables: Record<string, unknown> = { ids: ['1'] }) => shareKey(schema, parse(query), undefined, variables);

describe('shareKey', () => {
  it('shares a public selection whatever posts are watched', () => {
    expect(keyOf(WATCH, { ids: ['1'] })).not.toBeNull();
    expect(keyOf(WATCH, { ids: ['1'] })).toBe(keyOf(WATCH, { ids: ['2', '3'] }));
  });

  it.each([
    ['viewer state', WITH_STATE],
    [
      'viewer state in a fragment',
      'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { ...F } } fragment F on Post { id myState { faved } }',
    ],
    ['a list that spends a budget', 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { likers { edges { node { id } } } } }'],
    [
      "the author's viewer-dependent field",
      'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { author { followedByViewer } } }',
    ],
    [
      'a user watched with their followers list',
      'subscription($ids: [ID!]!) { userCountsChanged(userIds: $ids) { followers { edges { cursor } } } }',
    ],
  ])('does not share a selection with %s', (_, query) => {
    expect(keyOf(query)).toBeNull();
  });

  it('tells apart variables a directive reads', () => {
    const query = 'subscription($ids: [ID!]!, $t: Boolean!) { postCountsChanged(postIds: $ids) { id title @include(if: $t) } }';
    expect(keyOf(query, { ids: ['1'], t: true })).not.toBe(keyOf(query, { ids: ['1'], t: false }));
  });
});

describe('createSharedSubscribe', () => {
  const post = (id: number, likes: number): LivePost =>
    ({
      id,
      authorId: 1,
      title: 't',
      body: 'b',
      createdAt: new Date(0),
      liveCounts: { slots: [0, likes, 0, 0, 0], asOf: new Date(1000) },
      publishedAt: 1000,
    }) as LivePost;

  /** One subscription: its stream (what liveCounts hands it) and its results as graphql-ws reads them. */
  async function subscribeTo(subscribe: ReturnType<typeof createSharedSubscribe>, query: string, viewerId: number | null) {
    let ended = false;
    const stream = new LiveStream<LivePost>({ stallMs: 60_000, onStall: () => {}, onEnd: () => (ended = true) });
    const contextValue = {
      viewer: viewerId === null ? null : { id: viewerId, name: null, validUntilMs: Number.POSITIVE_INFINITY },
      live: { maxIds: 100, posts: async () => stream, users: async () => new LiveStream({ stallMs: 1, onStall() {}, onEnd() {} }) },
      // myState's loader answers with the viewer it was made for, as the per-request loaders do.
      loaders: { viewerState: { load: async () => new Set(viewerId === 7 ? [LIKE.name, HEART.name] : []) } },
    } as unknown as GraphQLContext;
    const results = (await subscribe({
      schema,
      document: parse(query),
      variableValues: { ids: ['5'] },
      contextValue,
    })) as AsyncIterableIterator<ExecutionResult>;
    return { stream, results, ended: () => ended };
  }

  it('executes a public selection once per pushed value for every subscription', async () => {
    const subscribe = createSharedSubscribe();
    const a = await subscribeTo(subscribe, WATCH, null);
    const b = await subscribeTo(subscribe, WATCH, 7);
    const value = post(5, 3);
    a.stream.offer(5, value);
    b.stream.offer(5, value);
    const [first, second] = [(await a.results.next()).value, (await b.results.next()).value];
    expect(first).toEqual({
      data: { postCountsChanged: { id: '5', __typename: 'Post', counts: { likes: 3, favs: 0, asOf: new Date(1000).toISOString() } } },
    });
    expect(second).toBe(first);
    // A newer value is a new execution.
    const newer = post(5, 4);
    a.stream.offer(5, newer);
    expect((await a.results.next()).value.data.postCountsChanged.counts.likes).toBe(4);
  });

  it("executes a viewer's state for each subscription", async () => {
    const subscribe = createSharedSubscribe();
    const liker = await subscribeTo(subscribe, WITH_STATE, 7);
    const other = await subscribeTo(subscribe, WITH_STATE, 8);
    const value = post(5, 1);
    liker.stream.offer(5, value);
    other.stream.offer(5, value);
    expect((await liker.results.next()).value.data.postCountsChanged.myState).toEqual({ liked: true });
    expect((await other.results.next()).value.data.postCountsChanged.myState).toEqual({ liked: false });
  });

  it('shares reactionGroups without viewerHasReacted, run for no viewer; with it, each viewer gets their own', async () => {
    const subscribe = createSharedSubscribe();
    const groups = (fields: string) =>
      `subscription R($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id reactionGroups { ${fields} } } }`;
    // Viewer 7 holds HEART, which this push does not count yet: only their own selection may show it.
    const holder = await subscribeTo(subscribe, groups('content count'), 7);
    const anonymous = await subscribeTo(subscribe, groups('content count'), null);
    const own = await subscribeTo(subscribe, groups('content count viewerHasReacted'), 7);
    const value = post(5, 1);
    const slots = [...value.liveCounts!.slots];
    slots[THUMBS_UP.slot!] = 2;
    const pushed = { ...value, liveCounts: { ...value.liveCounts!, slots } } as LivePost;
    for (const s of [holder, anonymous, own]) s.stream.offer(5, pushed);
    const [first, second, third] = await Promise.all([holder, anonymous, own].map(async (s) => (await s.results.next()).value));
    expect(second).toBe(first);
    expect(first.data.postCountsChanged.reactionGroups).toEqual([{ content: 'THUMBS_UP', count: 2 }]);
    expect(third.data.postCountsChanged.reactionGroups).toEqual([
      { content: 'THUMBS_UP', count: 2, viewerHasReacted: false },
      { content: 'HEART', count: 0, viewerHasReacted: true },
    ]);
  });

  it('lets go of the stream at once when the subscription completes while waiting for a push', async () => {
    const a = await subscribeTo(createSharedSubscribe(), WATCH, null);
    const waiting = a.results.next();
    await a.results.return?.();
    expect(a.ended()).toBe(true);
    expect(await waiting).toEqual({ value: undefined, done: true });
  });
});
