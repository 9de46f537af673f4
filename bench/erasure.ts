// `npm run bench:erasure`: the account-erasure scenario alone (bench/scenarios/erasure.ts); writes bench/results/erasure.json.
import os from 'node:os';
import { projectPath } from '../src/paths.js';
import { machineInfo } from './lib/machine.js';
import { writeResults } from './lib/report.js';
import { runStandalone } from './lib/standalone.js';
import { erasureSettings, runErasureScenario } from './scenarios/erasure.js';
import { erasureCorrect, erasureTable, erasureTargets } from './scenarios/erasureReport.js';

const settings = erasureSettings();

await runStandalone('bench:erasure', async (env, elapsed) => {
  const machine = await machineInfo(env.databaseUrl, env.redisUrl);
  console.log(`[${elapsed()}] account erasure: ${settings.likes} likes, ${settings.feedPerS} feed pages/s + ${settings.likesPerS} likes/s`);
  const erasure = await runErasureScenario({ env, settings, log: (line) => console.log(`[${elapsed()}] ${line.trimStart()}`) });
  const table = erasureTable(erasure);
  console.log(`\n${table}\n`);
  const path = projectPath('bench/results/erasure.json');
  const loadAverageEnd = os.loadavg().map((x) => Number(x.toFixed(2)));
  await writeResults(path, { machine: { ...machine, loadAverageEnd }, erasure, erasureTargets: erasureTargets(erasure), table });
  console.log(`[${elapsed()}] results written to ${path}`);
  // A count off or something of the victim left fails the run; a slowdown is measured, not a failure.
  return erasureCorrect(erasure);
});
