// Once per run: a migrated template database that every test file clones (CREATE DATABASE …
// TEMPLATE is a file copy: fast, and each file gets an isolated database). Dropped at the end,
// with any clone a crashed file left behind.
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { ADMIN_DATABASE_URL, databaseUrl } from './env.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    runId: string;
  }
}

async function dropDatabases(prefix: string) {
  const admin = new pg.Client({ connectionString: ADMIN_DATABASE_URL });
  await admin.connect();
  try {
    const { rows } = await admin.query<{ datname: string }>(
      "SELECT datname FROM pg_database WHERE datname LIKE $1 || '%'",
      [prefix],
    );
    for (const { datname } of rows) await admin.query(`DROP DATABASE IF EXISTS "${datname}" WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

export default async function setup(project: TestProject) {
  const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const template = `tally_t_${runId}_tpl`;
  await migrate(databaseUrl(template));
  project.provide('templateDatabase', template);
  project.provide('runId', runId);
  return async () => dropDatabases(`tally_t_${runId}_`);
}
