// Tally's own ApiDeps, per-request context factory (hence the same DataLoaders) and Redis
// counters, for the baselines that serve Tally's schema through another pipeline. The app is
// started as a whole (ROLE=api) because `App.stop` expects a started app; its own HTTP port
// stays idle, so the pipeline under test is the only one doing work.
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createContextFactory } from '../../src/graphql/context.js';
import { trackRedis } from './redisStats.js';

export async function startTallyCore(env: NodeJS.ProcessEnv) {
  const app = createApp(loadConfig({ ...env, ROLE: 'api' }));
  const redisStats = trackRedis(app.redis, app.redisRoundTrips);
  await app.start();
  return {
    deps: app.deps,
    context: createContextFactory(app.deps),
    redisStats,
    stop: () => app.stop(),
  };
}

export type TallyCore = Awaited<ReturnType<typeof startTallyCore>>;
