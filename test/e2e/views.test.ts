// Views through the API: each (viewer, post) counted once per window, distinct viewers exact
// while few, the author's own views and anonymous ones by the deployment's rules, a budget
// per viewer, and a missing post failing its own entry only.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { connectLive, onServer } from '../support/liveClient.js';
import { waitFor } from '../support/wait.js';

const RECORD = `mutation($ids: [ID!]!) { recordViews(input: { postIds: $ids }) { views { counted post { id } } } }`;
const READ = `query($ids: [ID!]!) { posts(ids: $ids) { id views { total unique asOf } } }`;
const AUTHOR = 1;
/** Long enough for the repeats below to fall inside it on a slow machine, short enough to wait out once. */
const WINDOW_MS = 20_000;

type Views = { total: number; unique: number; asOf: string | null };

/** Runs `work` over `items`, `width` at a time. */
async function inParallel<T>(items: readonly T[], width: number, work: (item: T) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}

describe('views', () => {
  let t: TestApp;
  const record = async (ids: string[], token?: string) => t.gql(RECORD, { ids }, token ? { token } : {});
  const counted = async (ids: string[], token?: string) => {
    const res = await record(ids, token);
    expect(res.errors).toBeUndefined();
    return res.data.recordViews.views.map((v: { counted: boolean }) => v.counted);
  };
  /** The posts' views once their counts include every view recorded before now. */
  const settled = async (ids: string[]): Promise<Views[]> => {
    const since = Date.now();
    const res = await waitFor(
      () => t.gql(READ, { ids }),
      (r) => r.data?.posts.every((p: { views: Views } | null) => p?.views.asOf && Date.parse(p.views.asOf) > since),
      { what: `views asOf after ${since}` },
    );
    return res.data.posts.map((p: { views: Views }) => p.views);
  };

  beforeAll(async () => {
    t = await startTestApp({ VIEW_WINDOW_MS: String(WINDOW_MS), RATE_LIMIT_VIEWS: '1000000' });
  });
  afterAll(() => t?.stop());

  it('counts 1,000 viewers × 20 posts exactly: repeats inside the window once, across it again', async () => {
    const posts = await t.createPosts(20, AUTHOR);
    const viewers = await Promise.all(Array.from({ length: 1000 }, (_, i) => t.token(10_000 + i)));
    const clockPost = (await t.createPosts(1, AUTHOR))[0]!;
    const clock = await t.token(9_999);

    const round = async (expected: boolean) => {
      const answers: boolean[] = [];
      await inParallel(viewers, 16, async (token) => {
        answers.push(...(await counted(posts, token)));
      });
      expect(answers.filter((a) => a === expected)).toHaveLength(20_000);
    };
    const started = Date.now();
    await round(true);
    // The clock viewer's view of its own post, counted after every view of the round: once its
    // next one counts, the window of each of those has passed too (no sleep).
    expect(await counted([clockPost], clock)).toEqual([true]);
    await round(false); // the same viewers again, inside the window: nothing counts
    expect(Date.now() - started, 'both rounds inside one window').toBeLessThan(WINDOW_MS);
    expect(await settled(posts)).toEqual(posts.map(() => expect.objectContaining({ total: 1000, unique: 1000 })));

    await waitFor(
      () => counted([clockPost], clock),
      ([c]) => c === true,
      { timeoutMs: WINDOW_MS + 10_000, intervalMs: 250, what: 'the window to pass' },
    );
    await round(true);
    expect(await settled(posts)).toEqual(posts.map(() => expect.objectContaining({ total: 2000, unique: 1000 })));
    expect(await settled([clockPost])).toEqual([expect.objectContaining({ total: 2, unique: 1 })]);

    // Everything added up: the backlog metric says so for every partition.
    const metrics = await (await fetch(`${t.url}/metrics`)).text();
    const buffered = [...metrics.matchAll(/^tally_views_backlog\{partition="\d+",state="buffered"\} (\d+)$/gm)].map((m) => Number(m[1]));
    expect(buffered).toEqual(Array(t.app.keys.partitions).fill(0));
  }, 120_000);

  it('does not count an author viewing their own post, nor a client without a token by default', async () => {
    const [post] = await t.createPosts(1, AUTHOR);
    expect(await counted([post!], await t.token(AUTHOR))).toEqual([false]);
    expect(await counted([post!])).toEqual([false]);
    expect(await counted([post!], await t.token(77))).toEqual([true]);
    expect(await settled([post!])).toEqual([expect.objectContaining({ total: 1, unique: 1 })]);
  });

  it('answers NOT_FOUND for a deleted or missing post at its entry, and records the others', async () => {
    const [kept, deleted] = await t.createPosts(2, AUTHOR);
    await t.gql('mutation($id: ID!) { deletePost(id: $id) { id } }', { id: deleted }, { token: await t.token(AUTHOR) });
    const viewer = await t.token(78);
    // Three times: the first run goes to graphql-js, the later ones run compiled (JIT_COMPILE_AFTER).
    for (let run = 0; run < 3; run++) {
      const res = await record([deleted!, kept!, '999999', kept!], viewer);
      expect(res.data.recordViews.views).toEqual([null, { counted: run === 0, post: { id: kept } }, null]);
      expect(res.errors?.map((e) => [e.extensions?.code, e.path])).toEqual([
        ['NOT_FOUND', ['recordViews', 'views', 0]],
        ['NOT_FOUND', ['recordViews', 'views', 2]],
      ]);
    }
    expect(await settled([kept!])).toEqual([expect.objectContaining({ total: 1, unique: 1 })]);
  });

  it('pushes the views to postCountsChanged watchers with the other counts, coalesced per flush', async () => {
    const [post] = await t.createPosts(1, AUTHOR);
    const live = connectLive(t.url);
    try {
      const watch = await onServer(t.url, 1, () =>
        live.subscribe('subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id views { total unique } } }', {
          ids: [post],
        }),
      );
      const viewers = await Promise.all(Array.from({ length: 20 }, (_, i) => t.token(81 + i)));
      await Promise.all(viewers.map((token) => counted([post!], token)));
      const last = await waitFor(
        async () => watch.received.at(-1)?.data.postCountsChanged.views,
        (views) => views?.total === 20,
        { what: 'a push with the 20 views' },
      );
      expect(last).toEqual({ total: 20, unique: 20 });
      expect(watch.received.length).toBeLessThan(20); // views arriving together, pushed together
    } finally {
      await live.dispose();
    }
  });

  it('refuses no ids, more than 100 and a malformed one as BAD_USER_INPUT, before counting anything', async () => {
    const [post] = await t.createPosts(1, AUTHOR);
    const viewer = await t.token(79);
    const ids = Array.from({ length: 101 }, (_, i) => String(i + 1));
    for (const bad of [[], ids, [post!, 'x']]) expect(errorCodes(await record(bad, viewer))).toEqual(['BAD_USER_INPUT']);
    expect(await counted([post!], viewer)).toEqual([true]);
  });
});

describe('views under other rules', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ VIEWS_ANONYMOUS: 'address', VIEWS_COUNT_AUTHOR: 'true', RATE_LIMIT_VIEWS: '100' });
  });
  afterAll(() => t?.stop());
  const views = async (id: string) =>
    waitFor(
      () => t.gql(READ, { ids: [id] }),
      (r) => r.data?.posts[0]?.views.total > 0,
      { what: 'the views counted' },
    ).then((r) => r.data.posts[0].views);

  it('counts an anonymous client by its address in total only, and the author', async () => {
    const [post] = await t.createPosts(1, AUTHOR);
    const anonymous = await t.gql(RECORD, { ids: [post] });
    expect(anonymous.data.recordViews.views).toEqual([{ counted: true, post: { id: post } }]);
    expect((await t.gql(RECORD, { ids: [post] })).data.recordViews.views[0].counted).toBe(false); // same address, same window
    const author = await t.gql(RECORD, { ids: [post] }, { token: await t.token(AUTHOR) });
    expect(author.data.recordViews.views[0].counted).toBe(true);
    await waitFor(
      () => views(post!),
      (v) => v.total === 2,
      { what: 'both views' },
    );
    expect(await views(post!)).toMatchObject({ total: 2, unique: 1 });
  });

  it('refuses a viewer past its budget with RATE_LIMITED and Retry-After, counting none of that request', async () => {
    const posts = await t.createPosts(60, AUTHOR); // 60 of the 100 tokens, then 40 left
    const viewer = await t.token(80);
    expect((await t.gql(RECORD, { ids: posts }, { token: viewer })).errors).toBeUndefined();
    const refused = await t.gql(RECORD, { ids: posts }, { token: viewer });
    expect(errorCodes(refused)).toEqual(['RATE_LIMITED']);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // The page above was known to the API process, so the recording script took the budget; a
    // post it does not know yet is looked up only after the budget was taken, and refused the same.
    const [unknown] = await t.createPosts(1, AUTHOR);
    const refusedFirst = await t.gql(RECORD, { ids: [...posts, unknown] }, { token: viewer });
    expect(errorCodes(refusedFirst)).toEqual(['RATE_LIMITED']);
    expect(refusedFirst.status).toBe(429);
  });
});
