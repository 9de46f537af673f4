// Tally's own ApiDeps, per-request context (hence the same DataLoaders) and Redis counters,
// for the baselines that serve Tally's schema through another pipeline ((a) and (d)). The app
// is started as a whole (ROLE=api) because `App.stop` expects a started app; its own HTTP port
// stays idle, so the pipeline under test is the only one doing work.
import type { IncomingMessage } from 'node:http';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createContextFactory } from '../../src/graphql/context.js';
import { createRequestScope, requestIdFrom } from '../../src/requestScope.js';
import { trackRedis } from './redisStats.js';

export async function startTallyCore(env: NodeJS.ProcessEnv) {
  const app = createApp(loadConfig({ ...env, ROLE: 'api' }));
  const redisStats = trackRedis(app.redis, app.redisRoundTrips);
  await app.start();
  const context = createContextFactory(app.deps);
  return {
    /** Tally's context of one request, as its own HTTP front builds it. */
    contextOf: (req: IncomingMessage) =>
      context(
        req.headers.authorization,
        createRequestScope(requestIdFrom(req.headers['x-request-id']), req.socket.remoteAddress ?? 'unknown'),
      ),
    redisStats,
    stop: () => app.stop(),
  };
}
