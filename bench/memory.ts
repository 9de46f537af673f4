// `npm run bench:memory`: the memory scenario alone. Needs only Redis (TEST_REDIS_URL) and an
// empty database in it (BENCH_MEMORY_DB, default 15), which it empties again; prints the
// memory tables and writes bench/results/memory.json (the full `npm run bench` puts the same
// under "memory" in latest.json).
import { projectPath } from '../src/paths.js';
import { TEST_REDIS_URL } from '../test/support/env.js';
import { targetsOf, writeResults } from './lib/report.js';
import { emptyMemoryDb, memoryDb, runMemoryScenario } from './scenarios/memory.js';
import { memoryRatios, memoryTable } from './scenarios/memoryReport.js';

const db = memoryDb();
let started = false;
// Interrupted: drop whatever was written so far (the database was empty when the run began).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void (started ? emptyMemoryDb(TEST_REDIS_URL, db) : Promise.resolve()).finally(() => process.exit(130)));
}

console.log(`bench:memory: Redis ${TEST_REDIS_URL}, database ${db}`);
started = true;
const memory = await runMemoryScenario({ redisUrl: TEST_REDIS_URL, db, log: console.log });
const table = memoryTable(memory);
console.log(`\n${table}\n`);
const path = projectPath('bench/results/memory.json');
await writeResults(path, {
  date: new Date().toISOString(),
  memory,
  targets: targetsOf(memoryRatios(memory)),
  table,
});
console.log(`results written to ${path}`);
