// `npm run bench:live`: the live counts scenario alone (bench/scenarios/live.ts). Creates its
// own database and Redis key prefix, prints the table and writes bench/results/live.json (the
// full `npm run bench` puts the same under "live" in latest.json), and removes what it created.
import os from 'node:os';
import { projectPath } from '../src/paths.js';
import { createBenchEnv } from './lib/env.js';
import { machineInfo } from './lib/machine.js';
import { meetsTarget, writeResults } from './lib/report.js';
import { liveSettings, runLiveScenario } from './scenarios/live.js';
import { liveRatios, liveTable } from './scenarios/liveReport.js';

const settings = liveSettings();
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
  console.log(`bench:live: database ${env.databaseName}, Redis prefix ${env.redisKeyPrefix}`);
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
    liveTargets: liveRatios(live)
      .filter((r) => r.target !== undefined)
      .map((r) => ({
        label: r.label,
        value: Number(r.value.toFixed(3)),
        target: r.target,
        atMost: r.atMost ?? false,
        met: meetsTarget(r),
      })),
    table,
  });
  console.log(`[${elapsed()}] results written to ${path}`);
  if (live.phases.some((x) => x.problems.length > 0 || !x.exact)) process.exitCode = 1;
} finally {
  const left = await cleanup();
  console.log(`[${elapsed()}] cleaned up: ${left.databasesLeft} database(s), ${left.keysLeft} key(s) left under ${env.redisKeyPrefix}`);
  if (left.databasesLeft + left.keysLeft > 0) process.exitCode = 1;
}
