// `npm run replay`: recomputes counters from the event log's history and switches to them.
import { loadConfig } from '../config.js';
import { createReplay, ReplayRefused } from '../counters/replay.js';
import { openParts } from '../process/parts.js';
import { createProgressBar } from './progress.js';

const { redis, keys, eventLogs, stores, close } = openParts(loadConfig(), { name: 'tally-replay' });
const bar = createProgressBar('replay');
try {
  const started = Date.now();
  await createReplay({ redis, keys, eventLog: eventLogs.consumed, erasures: stores.erasures }).run({
    onProgress: ({ partition }) => bar.update('partitions', partition + 1, keys.partitions),
  });
  bar.end();
  console.log(`replayed ${keys.partitions} partitions in ${((Date.now() - started) / 1000).toFixed(1)} s; counters switched`);
} catch (error) {
  bar.end();
  console.error(error instanceof ReplayRefused ? `replay refused: ${error.message}` : `replay failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  await close();
}
