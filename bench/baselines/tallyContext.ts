// Tally's per-request context, for the baselines that run Tally's resolvers through another pipeline ((a) and (d)).
import type { IncomingMessage } from 'node:http';
import { createRequestScope, requestIdFrom } from '../../src/requestScope.js';
import type { TallyCore } from '../lib/tallyCore.js';

export const tallyContext = (core: TallyCore, req: IncomingMessage) =>
  core.context(
    req.headers.authorization,
    createRequestScope(requestIdFrom(req.headers['x-request-id']), req.socket.remoteAddress ?? 'unknown'),
  );
