import { createRequire } from 'node:module';
import { defineConfig } from 'vitest/config';

const require = createRequire(import.meta.url);

export default defineConfig({
  resolve: {
    // graphql 16 has no exports map: Node loads its CommonJS main, Vite would pick its `module`
    // build. Our code must share the one copy Apollo, graphql-tools and graphql-jit use, or
    // schemas and errors fail their instanceof checks across the two.
    alias: [{ find: /^graphql$/, replacement: require.resolve('graphql') }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file owns its database and Redis key prefix, so files run in parallel. They mostly
    // wait on Redis, PostgreSQL and child processes, so one fork more than the 2 cores keeps the
    // CPU busy: the suite took 391 s with 3 workers against 557-590 s with the default 2.
    pool: 'forks',
    maxWorkers: 3,
    env: { NODE_ENV: 'test' },
  },
});
