// `npm run bench:live`: the live counts scenario alone (bench/scenarios/live.ts). Creates its
// own database and Redis key prefix, prints the table and writes bench/results/live.json (the
// full `npm run bench` puts the same under "live" in latest.json), and removes what it created.
import os from 'node:os';
import { projectPath } from '../src/paths.js';
import { machineInfo } from './lib/machine.js';
import { targetsOf, writeResults } from './lib/report.js';
import { runStandalone } from './lib/standalone.js';
import { liveSettings, runLiveScenario } from './scenarios/live.js';
import { liveRatios, liveTable } from './scenarios/liveReport.js';

const settings = liveSettings();

await runStandalone('bench:live', async (env, elapsed) => {
  const machine = await machineInfo(env.databaseUrl, env.redisUrl);
  console.log(
    `[${elapsed()}] live counts: ${settings.sockets} sockets vs ${settings.pollers} pollers, ${settings.likesPerS} likes/s for ${settings.durationS} s per phase, ${settings.clientProcesses} client processes + 1 for the ${settings.sampledSockets} timed sockets`,
  );
  const live = await runLiveScenario({ env, settings, log: console.log });
  const table = liveTable(live);
  console.log(`\n${table}\n`);
  const path = projectPath('bench/results/live.json');
  await writeResults(path, {
    machine: { ...machine, loadAverageEnd: os.loadavg().map((x) => Number(x.toFixed(2))) },
    live,
    liveTargets: targetsOf(liveRatios(live)),
    table,
  });
  console.log(`[${elapsed()}] results written to ${path}`);
  return !live.phases.some((x) => x.problems.length > 0 || !x.exact);
});
