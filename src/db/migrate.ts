// Applies prisma/migrations/*/migration.sql in order and records them in
// `_prisma_migrations` exactly as `prisma migrate deploy` does, so a deployment can use
// either tool. Each migration runs in its own transaction; an applied migration whose file
// changed since (checksum) stops the run before anything is applied.
import { createHash, randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { projectPath } from '../paths.js';

export const MIGRATIONS_DIR = projectPath('prisma', 'migrations');

// The advisory lock key `prisma migrate` takes, so our runner and Prisma's exclude each other.
const PRISMA_MIGRATE_LOCK = 72707369;

const CREATE_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id" VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum" VARCHAR(64) NOT NULL,
  "finished_at" TIMESTAMPTZ,
  "migration_name" VARCHAR(255) NOT NULL,
  "logs" TEXT,
  "rolled_back_at" TIMESTAMPTZ,
  "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

export class MigrationError extends Error {
  override name = 'MigrationError';
}

export interface MigrationResult {
  applied: string[];
  alreadyApplied: string[];
}

interface LocalMigration {
  name: string;
  sql: string;
  checksum: string;
}

export const checksumOf = (sql: string) => createHash('sha256').update(sql).digest('hex');

async function readMigrations(dir: string): Promise<LocalMigration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => {
      const sql = await readFile(join(dir, name, 'migration.sql'), 'utf8');
      return { name, sql, checksum: checksumOf(sql) };
    }),
  );
}

/** Creates the database named in the URL if it does not exist (as `prisma migrate deploy` does). */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const probe = new pg.Client({ connectionString: databaseUrl });
  try {
    await probe.connect();
    return false;
  } catch (error) {
    if ((error as { code?: string }).code !== '3D000') throw error; // 3D000: invalid_catalog_name
  } finally {
    await probe.end().catch(() => {});
  }
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  url.pathname = '/postgres';
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE "${name.replaceAll('"', '""')}"`);
  } catch (error) {
    if ((error as { code?: string }).code !== '42P04') throw error; // created concurrently
  } finally {
    await admin.end();
  }
  return true;
}

export async function migrate(databaseUrl: string, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  await ensureDatabase(databaseUrl);
  const local = await readMigrations(dir);
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [PRISMA_MIGRATE_LOCK]);
    await client.query(CREATE_TABLE);
    const { rows } = await client.query<{ migration_name: string; checksum: string; finished_at: Date | null }>(
      'SELECT migration_name, checksum, finished_at FROM "_prisma_migrations" WHERE rolled_back_at IS NULL',
    );
    const applied = new Map(rows.map((r) => [r.migration_name, r]));

    const failed = rows.filter((r) => r.finished_at === null).map((r) => r.migration_name);
    if (failed.length > 0) {
      throw new MigrationError(`migration(s) ${failed.join(', ')} failed earlier; resolve them before deploying`);
    }
    const edited = local.filter((m) => {
      const row = applied.get(m.name);
      // Prisma also accepts a file whose only change is CRLF line endings.
      return row && row.checksum !== m.checksum && row.checksum !== checksumOf(m.sql.replaceAll('\r\n', '\n'));
    });
    if (edited.length > 0) {
      throw new MigrationError(
        `applied migration(s) were edited after being applied: ${edited.map((m) => m.name).join(', ')}. ` +
          'Restore the original file and add a new migration instead.',
      );
    }

    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const m of local) {
      if (applied.has(m.name)) {
        result.alreadyApplied.push(m.name);
        continue;
      }
      await client.query('BEGIN');
      try {
        const id = randomUUID();
        await client.query('INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())', [
          id,
          m.checksum,
          m.name,
        ]);
        await client.query(m.sql);
        await client.query('UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1', [id]);
        await client.query('COMMIT');
      } catch (error) {
        await client.query('ROLLBACK');
        throw new MigrationError(`migration ${m.name} failed and was rolled back: ${(error as Error).message}`);
      }
      result.applied.push(m.name);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [PRISMA_MIGRATE_LOCK]).catch(() => {});
    await client.end();
  }
}
