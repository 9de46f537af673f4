import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';
import { useIsolatedStores } from '../support/stores.js';

const run = promisify(execFile);
const stores = useIsolatedStores();

async function snapshot() {
  const client = new pg.Client({ connectionString: stores.db.url });
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
        env: { ...process.env, ...stores.env(), NODE_ENV: 'test' },
      });
    const firstRun = await seed();
    const first = await snapshot();
    const relations = Number(/(\d+) likes, favourites, reactions and follows set/.exec(firstRun.stdout)?.[1]);
    expect(relations).toBeGreaterThan(300);
    expect(first.users.length).toBeGreaterThanOrEqual(20);
    expect(first.posts.length).toBeGreaterThanOrEqual(200);
    expect(new Set(first.posts.map((p) => p.author_id)).size).toBeGreaterThan(10);

    const secondRun = await seed();
    expect(await snapshot()).toEqual(first);
    expect(secondRun.stdout).toContain(' 0 likes, favourites, reactions and follows set');
  }, 60_000);
});
