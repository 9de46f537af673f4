// `npm run recover [-- --restart]`: rebuilds Redis (facts and counters) from PostgreSQL after
// Redis lost its data. Workers start the same recovery by themselves; this runs it here, or,
// when a worker is running it already, follows its progress until it is done. Safe to
// interrupt and run again: it resumes where it stopped.
import { loadConfig } from '../config.js';
import { openParts } from '../process/parts.js';
import type { RecoveryOutcome } from '../recovery/recover.js';
import { createProgressBar } from './progress.js';

const FOLLOW_POLL_MS = 500;

const parts = openParts(loadConfig(), { name: 'tally-recover' });
const { readiness, recovery } = parts.recovery;
const bar = createProgressBar('recover');
try {
  await parts.checkDeployment();
  const started = Date.now();
  let followed = false;
  let outcome: RecoveryOutcome;
  for (;;) {
    outcome = await recovery.run({
      restart: process.argv.includes('--restart'),
      onProgress: (p) => p.step !== 'done' && bar.update(p.step, p.done, p.total),
    });
    if (outcome !== 'running elsewhere') break;
    // A worker holds the lock: show its progress, and take over if it stops.
    followed = true;
    const progress = await recovery.progress();
    bar.update('entities (a worker runs it)', progress?.done ?? 0, progress?.total ?? 0);
    await new Promise((resolve) => setTimeout(resolve, FOLLOW_POLL_MS));
  }
  bar.end();
  if ((await readiness.notReady()).length > 0) throw new Error('Redis still does not hold every partition');
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (outcome === 'not needed' && !followed) console.log('Redis holds every partition: nothing to recover');
  else console.log(`recovered${followed ? ' (by a worker)' : ''} in ${seconds} s; reads use Redis again`);
} catch (error) {
  bar.end();
  console.error(`recovery stopped: ${(error as Error).message}. Run it again to resume.`);
  process.exitCode = 1;
} finally {
  await parts.close();
}
