// `npm run replay`: recomputes counters from the event log's history and switches to them.
import { loadConfig } from '../config.js';
import { createReplay, ReplayRefused } from '../counters/replay.js';
import { createEventLogs } from '../events/eventLog.js';
import { createLogger } from '../log.js';
import { createRedis } from '../redis/client.js';
import { createKeys } from '../redis/keys.js';
import { withScripts } from '../redis/luaScripts.js';
import { createProgressBar } from './progress.js';

const config = loadConfig();
const logger = createLogger(config);
const redis = withScripts(createRedis(config, logger));
const keys = createKeys(config.redisKeyPrefix, config.partitions);
const eventLogs = createEventLogs(config, redis, keys, logger);
const bar = createProgressBar('replay');
try {
  const started = Date.now();
  await createReplay({ redis, keys, eventLog: eventLogs.consumed }).run({
    onProgress: ({ partition }) => bar.update('partitions', partition + 1, keys.partitions),
  });
  bar.end();
  console.log(`replayed ${keys.partitions} partitions in ${((Date.now() - started) / 1000).toFixed(1)} s; counters switched`);
} catch (error) {
  bar.end();
  console.error(error instanceof ReplayRefused ? `replay refused: ${error.message}` : `replay failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await eventLogs.close();
  redis.disconnect();
}
