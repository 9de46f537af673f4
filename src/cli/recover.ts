// `npm run recover [-- --restart]`: rebuilds Redis (facts and counters) from PostgreSQL after
// Redis lost its data. Safe to interrupt and run again; it resumes where it stopped.
import { loadConfig } from '../config.js';
import { createDb } from '../db/client.js';
import { createUserCounters } from '../counters/userCounters.js';
import { createFactStore } from '../db/facts.js';
import { createUserCounterStore } from '../db/userCounters.js';
import { createLogger } from '../log.js';
import { createRecovery } from '../recovery/recover.js';
import { createRedis } from '../redis/client.js';
import { checkDeployment } from '../redis/deployment.js';
import { createKeys } from '../redis/keys.js';
import { withScripts } from '../redis/scripts.js';
import { createProgressBar } from './progress.js';

const config = loadConfig();
const logger = createLogger(config);
const db = createDb(config.databaseUrl);
const redis = withScripts(createRedis(config, logger));
const keys = createKeys(config.redisKeyPrefix, config.partitions);
const bar = createProgressBar('recover');
try {
  const facts = createFactStore(db);
  await checkDeployment(redis, keys, facts.hasAny);
  const started = Date.now();
  const userStore = createUserCounterStore(db);
  const userCounters = createUserCounters({ redis, keys, store: userStore });
  await createRecovery({ redis, keys, facts, userStore, userCounters, logger }).run({
    restart: process.argv.includes('--restart'),
    onProgress: (p) => p.step !== 'done' && bar.update(p.step, p.done, p.total),
  });
  bar.end();
  console.log(`recovered in ${((Date.now() - started) / 1000).toFixed(1)} s; reads use Redis again`);
} catch (error) {
  bar.end();
  console.error(`recovery stopped: ${(error as Error).message}. Run it again to resume.`);
  process.exitCode = 1;
} finally {
  redis.disconnect();
  await db.$disconnect();
}
