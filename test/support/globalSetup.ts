// Once per run: a migrated template database that every test file clones (CREATE DATABASE …
// TEMPLATE is a file copy: fast, and each file gets an isolated database). Dropped at the end,
// with any clone a crashed file left behind.
import type { TestProject } from 'vitest/node';
import { migrate } from '../../src/db/migrate.js';
import { admin, databaseUrl, dropDatabase } from './env.js';

declare module 'vitest' {
  export interface ProvidedContext {
    templateDatabase: string;
    runId: string;
  }
}

async function dropDatabases(prefix: string) {
  const { rows } = await admin((c) =>
    c.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE $1 || '%'", [prefix]),
  );
  for (const { datname } of rows) await dropDatabase(datname);
}

export default async function setup(project: TestProject) {
  const runId = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const template = `tally_t_${runId}_tpl`;
  await migrate(databaseUrl(template));
  project.provide('templateDatabase', template);
  project.provide('runId', runId);
  return async () => dropDatabases(`tally_t_${runId}_`);
}
