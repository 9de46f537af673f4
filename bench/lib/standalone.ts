// The frame of a scenario run on its own (`npm run bench:live`, `npm run bench:erasure`): a
// database and Redis key prefix of its own, removed afterwards, also when interrupted; exit
// code 1 when the run says it failed or something was left behind.
import { type BenchEnv, createBenchEnv } from './env.js';

/** Runs `scenario` (true = passed) in a fresh bench environment; `elapsed` reads "12 s". */
export async function runStandalone(name: string, scenario: (env: BenchEnv, elapsed: () => string) => Promise<boolean>): Promise<void> {
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
    console.log(`${name}: database ${env.databaseName}, Redis prefix ${env.redisKeyPrefix}`);
    if (!(await scenario(env, elapsed))) process.exitCode = 1;
  } finally {
    const left = await cleanup();
    console.log(`[${elapsed()}] cleaned up: ${left.databasesLeft} database(s), ${left.keysLeft} key(s) left under ${env.redisKeyPrefix}`);
    if (left.databasesLeft + left.keysLeft > 0) process.exitCode = 1;
  }
}
