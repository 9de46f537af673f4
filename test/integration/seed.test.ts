import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

const run = promisify(execFile);
let db: TestDatabase;

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

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
  it('creates a small world, and a second run changes nothing', async () => {
    const seed = () =>
      run(projectPath('node_modules/.bin/tsx'), [projectPath('prisma/seed.ts')], {
        env: { ...process.env, DATABASE_URL: db.url, NODE_ENV: 'test' },
      });
    await seed();
    const first = await snapshot();
    expect(first.users.length).toBeGreaterThanOrEqual(20);
    expect(first.posts.length).toBeGreaterThanOrEqual(200);
    expect(new Set(first.posts.map((p) => p.author_id)).size).toBeGreaterThan(10);

    await seed();
    expect(await snapshot()).toEqual(first);
  }, 60_000);
});
