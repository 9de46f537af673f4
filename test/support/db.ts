// A fresh, migrated database for one test file, cloned from the run's template.
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { admin, databaseUrl, dropDatabase } from './env.js';

export interface TestDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

/** Creates `tally_t_<run>_<random>`; `empty` skips the template (for migration tests). */
export async function createTestDatabase(options: { empty?: boolean } = {}): Promise<TestDatabase> {
  const name = `tally_t_${inject('runId')}_${randomBytes(4).toString('hex')}`;
  const template = options.empty ? 'template0' : inject('templateDatabase');
  await admin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`));
  return {
    name,
    url: databaseUrl(name),
    drop: () => dropDatabase(name),
  };
}
