// `npm run db:migrate`: applies pending SQL migrations to DATABASE_URL.
import { loadConfig } from '../config.js';
import { migrate } from '../db/migrate.js';

const config = loadConfig();
try {
  const { applied, alreadyApplied } = await migrate(config.databaseUrl);
  for (const name of applied) console.log(`applied ${name}`);
  console.log(
    applied.length === 0
      ? `database is up to date (${alreadyApplied.length} migration(s) applied earlier)`
      : `${applied.length} migration(s) applied`,
  );
} catch (error) {
  console.error((error as Error).message);
  process.exit(1);
}
