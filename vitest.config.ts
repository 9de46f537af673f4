import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file owns its database and Redis key prefix, so files run in parallel.
    pool: 'forks',
    env: { NODE_ENV: 'test' },
  },
});
