// `npm run bench:memory`: the memory scenario alone. Needs only Redis (TEST_REDIS_URL); uses
// its own key prefix, removes every key it wrote, prints the memory tables and writes
// bench/results/memory.json (the full `npm run bench` puts the same under "memory" in latest.json).
import { projectPath } from '../src/paths.js';
import { TEST_REDIS_URL } from '../test/support/env.js';
import { countKeys, deleteKeys, uniquePrefix } from '../test/support/redis.js';
import { writeResults } from './lib/report.js';
import { runMemoryScenario } from './scenarios/memory.js';
import { memoryRatios, memoryTable } from './scenarios/memoryReport.js';

// Shaped like the full bench's (bench<id>:mem:), so key names, and so the bytes, are the same in both.
const prefix = `${uniquePrefix('bench')}mem:`;
// Interrupted: drop whatever was written so far.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void deleteKeys(prefix).finally(() => process.exit(130)));
}

try {
  console.log(`bench:memory: Redis ${TEST_REDIS_URL}, prefix ${prefix}`);
  const memory = await runMemoryScenario({ redisUrl: TEST_REDIS_URL, prefix, log: console.log });
  const table = memoryTable(memory);
  console.log(`\n${table}\n`);
  const path = projectPath('bench/results/memory.json');
  await writeResults(path, {
    date: new Date().toISOString(),
    memory,
    targets: memoryRatios(memory).map((r) => ({ label: r.label, value: Number(r.value.toFixed(3)), target: r.target, atMost: r.atMost ?? false })),
    table,
  });
  console.log(`results written to ${path}`);
} finally {
  await deleteKeys(prefix);
  const left = await countKeys(prefix);
  console.log(`cleaned up: ${left} key(s) left under ${prefix}`);
  if (left > 0) process.exitCode = 1;
}
