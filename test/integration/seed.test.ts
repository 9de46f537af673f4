import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';

const run = promisify(execFile);
let db: TestDatabase;
const prefix = uniquePrefix();

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db.drop();
  await deleteKeys(prefix);
});

async function snapshot() {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    const users = await client.query('SELECT id, name FROM users ORDER BY id');
    const posts = await client.query('SELECT id, author_id, title, body, created_at FROM posts ORDER BY id');
    return { users: users.rows, posts: posts.rows };
  } finally {
    await client.end();
  }
}

describe('npm run seed', () => {
  it('creates a small world with likes, and a second run changes nothing', async () => {
    const seed = () =>
      run(projectPath('node_modules/.bin/tsx'), [projectPath('prisma/seed.ts')], {
        env: { ...process.env, DATABASE_URL: db.url, NODE_ENV: 'test', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix },
      });
    const firstRun = await seed();
    const first = await snapshot();
    const relations = Number(/(\d+) likes and favourites set/.exec(firstRun.stdout)?.[1]);
    expect(relations).toBeGreaterThan(300);
    expect(first.users.length).toBeGreaterThanOrEqual(20);
    expect(first.posts.length).toBeGreaterThanOrEqual(200);
    expect(new Set(first.posts.map((p) => p.author_id)).size).toBeGreaterThan(10);

    const secondRun = await seed();
    expect(await snapshot()).toEqual(first);
    expect(secondRun.stdout).toContain(' 0 likes and favourites set');
  }, 60_000);
});
