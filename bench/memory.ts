// `npm run bench:memory`: the memory scenario alone (bench/scenarios/memory.ts), on TEST_REDIS_URL;
// writes bench/results/memory.json (`npm run bench` puts the same under "memory" in latest.json).
import { Redis } from 'ioredis';
import { projectPath } from '../src/paths.js';
import { TEST_REDIS_URL } from '../test/support/env.js';
import { targetsOf, writeResults } from './lib/report.js';
import { memoryDb, memoryRatios, memoryTable, runMemoryScenario } from './scenarios/memory.js';

const db = memoryDb();
console.log(`bench:memory: Redis ${TEST_REDIS_URL}, database ${db}`);
const memory = runMemoryScenario({ redisUrl: TEST_REDIS_URL, db, log: console.log });
// Interrupted: drop whatever was written so far (the database was empty when the run began).
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void new Redis(TEST_REDIS_URL, { db }).flushdb().finally(() => process.exit(130)));
}
const results = await memory;
const table = memoryTable(results);
console.log(`\n${table}\n`);
const path = projectPath('bench/results/memory.json');
await writeResults(path, { date: new Date().toISOString(), memory: results, targets: targetsOf(memoryRatios(results)), table });
console.log(`results written to ${path}`);
