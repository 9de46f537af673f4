// Tally's ApiDeps, request context and Redis counters for the baselines (a) and (d); its own HTTP port stays idle.
import type { IncomingMessage } from 'node:http';
import { createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createContextFactory } from '../../src/graphql/context.js';
import { createRequestScope, requestIdFrom } from '../../src/requestScope.js';
import { trackRedis } from './common.js';

export async function startTallyCore(env: NodeJS.ProcessEnv) {
  const app = createApp(loadConfig({ ...env, ROLE: 'api' }));
  const redisStats = trackRedis(app.redis, app.redisRoundTrips);
  await app.start();
  const context = createContextFactory(app.deps);
  const scopeOf = (req: IncomingMessage) =>
    createRequestScope(requestIdFrom(req.headers['x-request-id']), req.socket.remoteAddress ?? 'unknown');
  return { contextOf: (req: IncomingMessage) => context(req.headers.authorization, scopeOf(req)), redisStats, stop: () => app.stop() };
}
