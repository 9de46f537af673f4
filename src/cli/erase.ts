// `npm run erase -- USER_ID`: erases an account, as eraseAccount does (the operator's way to
// honour an erasure request). Returns at once with ERASING; the workers do the batches.
//   --dry-run USER_ID   what the erasure would change, without changing anything
//   --status            progress of the erasures still running, followed until they finish
import { loadConfig } from '../config.js';
import type { ErasureRow } from '../db/erasures.js';
import { createApi } from '../process/api.js';
import { openParts } from '../process/parts.js';
import { createProgressBar } from './progress.js';

const STATUS_POLL_MS = 500;
const USAGE = 'usage: npm run erase -- USER_ID | --dry-run USER_ID | --status';

const args = process.argv.slice(2);
const userArg = args.find((a) => !a.startsWith('--'));
const userId = userArg && /^[1-9][0-9]{0,15}$/.test(userArg) ? Number(userArg) : null;
if (!args.includes('--status') && (userId === null || !Number.isSafeInteger(userId))) {
  console.error(USAGE);
  process.exit(2);
}

const parts = openParts(loadConfig(), { name: 'tally-erase' });
const { erasureQueries: queries, erasures: store } = parts.stores;
const api = createApi(parts, { operator: true });

/** How far one erasure is: what its batches did, against what they did plus what is left. */
async function progressOf(row: ErasureRow) {
  const left = await queries.remaining(row.userId);
  const done = Object.values(row.progress.done ?? {}).reduce((a, b) => a + b, 0);
  const todo = left.posts + left.followers + Object.values(left.facts).reduce((a, b) => a + b, 0);
  return { phase: row.progress.phase ?? 'posts', done, total: done + todo };
}

try {
  if (args.includes('--status')) {
    const bars = new Map<number, ReturnType<typeof createProgressBar>>();
    for (;;) {
      const running = await store.running();
      if (running.length === 0) break;
      for (const row of running) {
        const bar = bars.get(row.userId) ?? createProgressBar(`user ${row.userId}`);
        bars.set(row.userId, bar);
        const { phase, done, total } = await progressOf(row);
        bar.update(phase, done, total);
      }
      await new Promise((resolve) => setTimeout(resolve, STATUS_POLL_MS));
    }
    for (const bar of bars.values()) bar.end();
    console.log(bars.size === 0 ? 'no erasure is running' : 'every erasure has finished');
  } else if (args.includes('--dry-run')) {
    const existing = await store.get(userId!);
    const left = await queries.remaining(userId!);
    console.log(
      JSON.stringify(
        {
          userId,
          erasure: existing?.state ?? 'none',
          wouldDelete: { posts: left.posts },
          wouldUndo: { ...left.facts, followers: left.followers },
        },
        null,
        2,
      ),
    );
  } else {
    const { state, started } = await api.deps.commands.accounts.eraseAsOperator(userId!);
    console.log(`user ${userId}: ${state}${started ? '' : ' (already requested)'}; follow it with npm run erase -- --status`);
  }
} catch (error) {
  console.error(`erase failed: ${(error as Error).message}`);
  process.exitCode = 1;
} finally {
  api.stop();
  await parts.close();
}
