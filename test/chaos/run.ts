// `npm run chaos [-- options]`: runs the fault suite, prints the table, writes
// test/artifacts/chaos.json, exits 1 if any row failed. Every option also has an env form.
//
//   --event-log redis,kafka   CHAOS_EVENT_LOG    which event logs (default: both)
//   --faults a,b              CHAOS_FAULTS       which faults (default: all; --list shows them)
//   --users N                 CHAOS_USERS        concurrent users, one operation in flight each (24)
//   --posts N                 CHAOS_POSTS        posts (3)
//   --ops-per-post N          CHAOS_OPS_PER_POST operations per post in the main load (2100)
//   --load-seconds N          CHAOS_LOAD_SECONDS the load is spread over about this long (20)
//   --seed N                  CHAOS_SEED         seed of the random workload (1)
//   --converge-cap N          CHAOS_CONVERGE_CAP seconds allowed to converge (60)
//   --out FILE                CHAOS_OUT          the JSON report (test/artifacts/chaos.json)
import { rmSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { projectPath } from '../../src/paths.js';
import { DEFAULT_SCALE, runChaos } from './chaos.js';
import { installSignalHandlers } from './cleanup.js';
import type { EventLogMode } from './deployment.js';
import { FAULTS } from './faults.js';
import { formatFindings, formatTable, writeReport } from './report.js';

const { values } = parseArgs({
  options: {
    'event-log': { type: 'string' },
    faults: { type: 'string' },
    users: { type: 'string' },
    posts: { type: 'string' },
    'ops-per-post': { type: 'string' },
    'load-seconds': { type: 'string' },
    seed: { type: 'string' },
    'converge-cap': { type: 'string' },
    out: { type: 'string' },
    list: { type: 'boolean' },
  },
});

if (values.list) {
  for (const f of FAULTS) console.log(`${f.name.padEnd(24)} ${f.title}`);
  process.exit(0);
}

const env = process.env;
const list = (v: string | undefined) =>
  (v ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
const num = (name: string, v: string | undefined, fallback: number) => {
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`chaos: ${name} must be a non-negative number, got ${v}`);
    process.exit(2);
  }
  return n;
};

const eventLogs = list(values['event-log'] ?? env.CHAOS_EVENT_LOG ?? 'redis,kafka') as EventLogMode[];
if (eventLogs.length === 0 || eventLogs.some((m) => m !== 'redis' && m !== 'kafka')) {
  console.error('chaos: --event-log takes redis, kafka or both (comma-separated)');
  process.exit(2);
}
const scale = {
  users: num('--users', values.users ?? env.CHAOS_USERS, DEFAULT_SCALE.users),
  posts: num('--posts', values.posts ?? env.CHAOS_POSTS, DEFAULT_SCALE.posts),
  opsPerPost: num('--ops-per-post', values['ops-per-post'] ?? env.CHAOS_OPS_PER_POST, DEFAULT_SCALE.opsPerPost),
  loadSeconds: num('--load-seconds', values['load-seconds'] ?? env.CHAOS_LOAD_SECONDS, DEFAULT_SCALE.loadSeconds),
};
const seed = num('--seed', values.seed ?? env.CHAOS_SEED, 1);
const convergeCapMs = num('--converge-cap', values['converge-cap'] ?? env.CHAOS_CONVERGE_CAP, 60) * 1000;
const out = values.out ?? env.CHAOS_OUT ?? projectPath('test/artifacts/chaos.json');
const logDir = projectPath('test/artifacts/chaos-logs');

installSignalHandlers();
// kafkajs sets a negative timer when it disconnects (Node warns, harmlessly); keep the output readable.
const warn = process.listeners('warning');
process.removeAllListeners('warning');
process.on('warning', (w) => {
  if (w.name !== 'TimeoutNegativeWarning') for (const l of warn) l(w);
});
rmSync(logDir, { recursive: true, force: true }); // the logs of the latest run only
const startedAt = new Date();
console.log(`chaos: event logs ${eventLogs.join(', ')}; scale ${JSON.stringify(scale)}; seed ${seed}; logs in ${logDir}`);
try {
  const rows = await runChaos({
    eventLogs,
    faults: list(values.faults ?? env.CHAOS_FAULTS),
    scale,
    seed,
    convergeCapMs,
    logDir,
    log: (line) => console.log(line),
    onRow: (row) =>
      console.log(
        `  ${row.pass ? 'PASS' : 'FAIL'} ${row.eventLog} ${row.fault}${row.failures.length ? `: ${row.failures.join('; ').slice(0, 300)}` : ''} (${(row.ms.row / 1000).toFixed(0)} s)`,
      ),
  });
  writeReport(out, { startedAt, finishedAt: new Date(), node: process.version, eventLogs, scale, seed, convergeCapMs, rows });
  console.log(`\n${formatTable(rows)}\n\n${formatFindings(rows)}`);
  console.log(`\nchaos: ${rows.filter((r) => r.pass).length}/${rows.length} rows passed; report in ${out}`);
  process.exit(rows.every((r) => r.pass) ? 0 : 1);
} catch (error) {
  console.error(`chaos: ${(error as Error).stack ?? error}`);
  process.exit(2);
}
