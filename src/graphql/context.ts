// The GraphQL context: who is asking, and a fresh set of loaders for this request only
// (loaders cache per request; viewer state must never leak between requests).
import type { Viewer } from '../auth/jwt.js';
import { unauthenticated } from '../errors.js';
import type { RequestScope } from '../requestScope.js';
import { createLoaders, type Loaders } from './loaders.js';
import type { Services } from './services.js';

export interface GraphQLContext {
  viewer: Viewer | null;
  /** The HTTP request's scope: its id, and what it ran and how it ended (for logs and metrics). */
  scope: RequestScope;
  loaders: Loaders;
  services: Services;
}

export function createContextFactory(services: Services) {
  return async (authorization: string | undefined, scope: RequestScope): Promise<GraphQLContext> => {
    const viewer = await services.auth.viewerFrom(authorization);
    if (viewer) await services.users.ensure(viewer.id, viewer.name);
    const client = viewer ? { userId: viewer.id } : { address: scope.client };
    return { viewer, scope, loaders: createLoaders(services, viewer, client), services };
  };
}

/** The viewer, or UNAUTHENTICATED for operations that need one. */
export function requireViewer(ctx: GraphQLContext): Viewer {
  if (!ctx.viewer) throw unauthenticated();
  return ctx.viewer;
}
