// `npm run bench:erasure`: the account-erasure scenario alone (bench/scenarios/erasure.ts).
// Creates its own database and Redis key prefix, prints the table and writes
// bench/results/erasure.json (the full `npm run bench` puts the same under "erasure" in
// latest.json), and removes what it created.
import os from 'node:os';
import { projectPath } from '../src/paths.js';
import { createBenchEnv } from './lib/env.js';
import { machineInfo } from './lib/machine.js';
import { writeResults } from './lib/report.js';
import { erasureSettings, runErasureScenario } from './scenarios/erasure.js';
import { erasureCorrect, erasureTable, erasureTargets } from './scenarios/erasureReport.js';

const settings = erasureSettings();
const started = Date.now();
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
const env = await createBenchEnv();
let cleaned: ReturnType<typeof env.cleanup> | null = null;
const cleanup = () => (cleaned ??= env.cleanup());
// Interrupted: the children exit on their own when their IPC channel closes; drop the data here.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanup().finally(() => process.exit(130)));
}

try {
  console.log(`bench:erasure: database ${env.databaseName}, Redis prefix ${env.redisKeyPrefix}`);
  const machine = await machineInfo(env.databaseUrl, env.redisUrl);
  console.log(
    `[${elapsed()}] account erasure: a victim with ${settings.likes} likes, erased under ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s; baseline ${settings.baselineS} s, erasure, baseline again`,
  );
  const erasure = await runErasureScenario({ env, settings, log: (line) => console.log(`[${elapsed()}] ${line.trimStart()}`) });
  const table = erasureTable(erasure);
  console.log(`\n${table}\n`);
  const path = projectPath('bench/results/erasure.json');
  await writeResults(path, {
    machine: { ...machine, loadAverageEnd: os.loadavg().map((x) => Number(x.toFixed(2))) },
    erasure,
    erasureTargets: erasureTargets(erasure),
    table,
  });
  console.log(`[${elapsed()}] results written to ${path}`);
  // A count off or something of the victim left fails the run; a slowdown is measured, not a failure.
  if (!erasureCorrect(erasure)) process.exitCode = 1;
} finally {
  const left = await cleanup();
  console.log(`[${elapsed()}] cleaned up: ${left.databasesLeft} database(s), ${left.keysLeft} key(s) left under ${env.redisKeyPrefix}`);
  if (left.databasesLeft + left.keysLeft > 0) process.exitCode = 1;
}
