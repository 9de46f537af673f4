import { appendFile, cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { checksumOf, MIGRATIONS_DIR, migrate } from '../../src/db/migrate.js';
import { createTestDatabase, type TestDatabase } from '../support/db.js';

let db: TestDatabase;
let dir: string;

async function query<T extends pg.QueryResultRow>(sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

const tables = async () =>
  (await query<{ tablename: string }>("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")).map((r) => r.tablename);

async function addMigration(name: string, sql: string) {
  await mkdir(join(dir, name));
  await writeFile(join(dir, name, 'migration.sql'), sql);
}

beforeEach(async () => {
  db = await createTestDatabase({ empty: true });
  dir = await mkdtemp(join(tmpdir(), 'tally-migrations-'));
  await cp(MIGRATIONS_DIR, dir, { recursive: true });
});

afterEach(async () => {
  await db.drop();
  await rm(dir, { recursive: true, force: true });
});

describe('migrate', () => {
  it('applies every migration to a fresh database and records it as prisma migrate deploy does', async () => {
    const result = await migrate(db.url, dir);
    expect(result.applied.length).toBeGreaterThan(0);
    expect(await tables()).toEqual(expect.arrayContaining(['_prisma_migrations', 'users', 'posts', 'relation_facts', 'user_counters']));
    const rows = await query<{
      migration_name: string;
      checksum: string;
      finished_at: Date | null;
      applied_steps_count: number;
      id: string;
    }>('SELECT * FROM "_prisma_migrations" ORDER BY migration_name');
    expect(rows.map((r) => r.migration_name)).toEqual(result.applied);
    for (const row of rows) {
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.applied_steps_count).toBe(1);
      expect(row.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(row.checksum).toMatch(/^[0-9a-f]{64}$/);
    }
  });

  it('is a no-op when the database is up to date', async () => {
    const first = await migrate(db.url, dir);
    const second = await migrate(db.url, dir);
    expect(second).toEqual({ applied: [], alreadyApplied: first.applied });
    expect(await query('SELECT 1 FROM "_prisma_migrations"')).toHaveLength(first.applied.length);
  });

  it('applies only the new migration, recording the checksum of its file', async () => {
    await migrate(db.url, dir);
    const sql = 'CREATE TABLE "extra" ("id" INTEGER PRIMARY KEY);\n';
    await addMigration('29990101000000_extra', sql);
    const result = await migrate(db.url, dir);
    expect(result.applied).toEqual(['29990101000000_extra']);
    const [row] = await query<{ checksum: string }>(
      `SELECT checksum FROM "_prisma_migrations" WHERE migration_name = '29990101000000_extra'`,
    );
    expect(row?.checksum).toBe(checksumOf(sql));
  });

  it('refuses to run when an applied migration file was edited, and applies nothing', async () => {
    const { applied } = await migrate(db.url, dir);
    await appendFile(join(dir, applied[0]!, 'migration.sql'), '\nALTER TABLE "users" ADD COLUMN "sneaky" TEXT;\n');
    await addMigration('29990101000000_extra', 'CREATE TABLE "extra" ("id" INTEGER PRIMARY KEY);');
    await expect(migrate(db.url, dir)).rejects.toThrow(/edited after being applied: 20261201000000_init/);
    expect(await tables()).not.toContain('extra');
  });

  it('rolls back a failing migration completely and records nothing for it', async () => {
    await migrate(db.url, dir);
    await addMigration('29990101000000_broken', 'CREATE TABLE "half" ("id" INTEGER);\nSELECT * FROM "no_such_table";');
    await expect(migrate(db.url, dir)).rejects.toThrow(/29990101000000_broken failed and was rolled back/);
    expect(await tables()).not.toContain('half');
    expect(await query(`SELECT 1 FROM "_prisma_migrations" WHERE migration_name = '29990101000000_broken'`)).toEqual([]);
  });

  it('creates the database when it does not exist', async () => {
    await db.drop();
    await migrate(db.url, dir);
    expect(await tables()).toContain('posts');
  });
});
