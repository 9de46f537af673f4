// The commands below GraphQL (src/services/), called the way a tool would: no HTTP, no
// resolvers, real PostgreSQL and Redis, the workers running in this process. What a command
// changes shows up in the same stores the API reads.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { countOf, type PostCounts } from '../../src/counters/postCounters.js';
import { FAV, LIKE } from '../../src/domain/relations.js';
import type { ApiDeps } from '../../src/graphql/apiDeps.js';
import { createMetrics } from '../../src/metrics.js';
import { createApi } from '../../src/process/api.js';
import { openParts, type Parts } from '../../src/process/parts.js';
import { createWorkers, type Workers } from '../../src/workers.js';
import { TEST_JWT_SECRET } from '../support/app.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';
import { waitUntil } from '../support/wait.js';

const prefix = uniquePrefix('cmd');
let db: TestDatabase;
let api: Parts;
let workers: Workers;
let services: ApiDeps;
let stopApi: () => void;

const AUTHOR = 1;
const READER = 2;
/** Only the budget test charges this one. */
const WRITER = 3;

/** The error a promise rejects with, by its GraphQL code. */
const codeOf = (promise: Promise<unknown>) =>
  promise.then(
    () => 'resolved',
    (error: { extensions?: { code?: string } }) => error.extensions?.code ?? String(error),
  );

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadConfig({
    NODE_ENV: 'production',
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: 'silent',
    RATE_LIMIT_WRITES: '5',
  });
  api = openParts(config, { name: 'tally-test' });
  await api.checkDeployment();
  ({ deps: services, stop: stopApi } = createApi(api));
  workers = createWorkers(
    openParts(config, { name: 'tally-test-worker', logger: api.logger }),
    createMetrics({ lag: async () => [], redisRoundTrips: () => 0 }),
  );
  await workers.start();
  for (const id of [AUTHOR, READER, WRITER]) await services.users.ensure(id, `user ${id}`);
});

afterAll(async () => {
  await workers?.stop();
  stopApi?.();
  await api?.close();
  await db?.drop();
  await deleteKeys(prefix);
});

const likesAndFavs = (counts: PostCounts | null | undefined) => ({
  likes: counts ? countOf(counts, LIKE) : null,
  favs: counts ? countOf(counts, FAV) : null,
});

describe('commands', () => {
  it('create a post, like and favourite it, and the counts and the author’s counters follow', async () => {
    const post = await services.commands.posts.create(AUTHOR, { title: 'Sourdough, week one', body: 'It rose.' });
    expect(post).toMatchObject({ authorId: AUTHOR, title: 'Sourdough, week one' });
    expect(likesAndFavs((await services.postCounters.load([post.id]))[0])).toEqual({ likes: 0, favs: 0 });

    const like = await services.commands.relations.setOnPost(READER, { postId: post.id, relation: LIKE, active: true });
    expect(like).toMatchObject({ active: true, changed: true });
    expect((await services.commands.relations.setOnPost(READER, { postId: post.id, relation: LIKE, active: true })).changed).toBe(false);
    await services.commands.relations.setOnPost(READER, { postId: post.id, relation: FAV, active: true });
    expect(await services.relations.viewerStates(READER, [post.id])).toEqual([new Set([LIKE.name, FAV.name])]);

    // The like and the favourite may be folded in different flush passes: wait for both.
    const counted = async () => likesAndFavs((await services.postCounters.load([post.id]))[0]);
    await waitUntil(async () => (await counted()).likes === 1 && (await counted()).favs === 1, {
      what: 'the like and the favourite to be counted',
    });
    expect(await counted()).toEqual({ likes: 1, favs: 1 });
    await waitUntil(async () => (await services.userCounters.load([AUTHOR]))[0]?.likesReceived === 1, {
      what: 'the author’s likesReceived',
    });
    expect((await services.userCounters.load([AUTHOR]))[0]).toMatchObject({ posts: 1, likesReceived: 1, favsReceived: 1 });
  });

  it('answer a retried change with the same idempotency key as the first, and refuse the key for another change', async () => {
    const post = await services.commands.posts.create(AUTHOR, { title: 'Retries', body: '' });
    const change = { postId: post.id, relation: LIKE, active: true, idempotencyKey: 'tap-1' };
    expect((await services.commands.relations.setOnPost(READER, change)).changed).toBe(true);
    expect((await services.commands.relations.setOnPost(READER, change)).changed).toBe(true); // the first answer, again
    expect(await codeOf(services.commands.relations.setOnPost(READER, { ...change, active: false }))).toBe('CONFLICT');
  });

  it('follow and unfollow a user, never oneself, never an unknown one', async () => {
    expect(await services.commands.relations.follow(READER, { followeeId: AUTHOR, active: true })).toMatchObject({
      user: { id: AUTHOR },
      changed: true,
    });
    expect(await services.relations.follows(READER, [AUTHOR])).toEqual([true]);
    expect((await services.commands.relations.follow(READER, { followeeId: AUTHOR, active: false })).changed).toBe(true);
    expect(await services.relations.follows(READER, [AUTHOR])).toEqual([false]);
    expect(await codeOf(services.commands.relations.follow(READER, { followeeId: READER, active: true }))).toBe('BAD_USER_INPUT');
    expect(await codeOf(services.commands.relations.follow(READER, { followeeId: 999_999, active: true }))).toBe('NOT_FOUND');
  });

  it('delete a post only as its author; it is gone for every later command', async () => {
    const post = await services.commands.posts.create(AUTHOR, { title: 'Short-lived', body: '' });
    expect(await codeOf(services.commands.posts.delete(READER, post.id))).toBe('FORBIDDEN');
    expect((await services.commands.posts.delete(AUTHOR, post.id)).id).toBe(post.id);
    expect(await codeOf(services.commands.posts.delete(AUTHOR, post.id))).toBe('NOT_FOUND');
    expect(await codeOf(services.commands.relations.setOnPost(READER, { postId: post.id, relation: LIKE, active: true }))).toBe(
      'NOT_FOUND',
    );
  });

  it('refuse bad text and empty budgets with their codes, writing nothing', async () => {
    const posts = () => api.db.post.count({ where: { authorId: WRITER } });
    expect(await codeOf(services.commands.posts.create(WRITER, { title: '   ', body: '' }))).toBe('BAD_USER_INPUT');
    expect(await codeOf(services.commands.posts.create(WRITER, { title: 'x'.repeat(201), body: '' }))).toBe('BAD_USER_INPUT');
    // The `writes` budget is 5 here (refused text took none): a profile change and four posts use it up.
    expect((await services.commands.profiles.update(WRITER, { likesPublic: true })).likesPublic).toBe(true);
    for (let i = 0; i < 4; i++) await services.commands.posts.create(WRITER, { title: `post ${i}`, body: '' });
    expect(await codeOf(services.commands.posts.create(WRITER, { title: 'one too many', body: '' }))).toBe('RATE_LIMITED');
    expect(await posts()).toBe(4);
  });
});
