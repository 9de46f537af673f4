// The GraphQL context: who is asking, and a fresh set of loaders for this request only
// (loaders cache per request; viewer state must never leak between requests). A WebSocket
// connection's context lives as long as the socket: its loaders do not cache, and it can
// watch live counts.
import type { Service, Viewer } from '../auth/jwt.js';
import { accountErased, forbidden, unauthenticated } from '../errors.js';
import type { Client } from '../limits/rateLimiter.js';
import type { LiveEntity, LivePost, LiveUser } from '../live/liveCounts.js';
import type { RequestScope } from '../requestScope.js';
import type { ApiDeps } from './apiDeps.js';
import { createLoaders, type Loaders } from './loaders.js';

/** What a WebSocket connection adds: watching live counts, within its limits. */
export interface LiveWatch {
  posts(ids: readonly number[]): Promise<AsyncIterable<LivePost>>;
  users(ids: readonly number[]): Promise<AsyncIterable<LiveUser>>;
  /** Entities of an owner type, by Tally's ids. */
  entities(type: string, ids: readonly number[]): Promise<AsyncIterable<LiveEntity>>;
  /** Ids one subscription may watch. */
  maxIds: number;
}

export interface GraphQLContext {
  viewer: Viewer | null;
  /** The product's service whose credential made the request (then `viewer` is null): it may register and delete its entities. */
  service: Service | null;
  /**
   * The user of a valid token whose account was erased (then `viewer` is null): only a retried
   * `eraseAccount` may run (src/graphql/erasedToken.ts).
   */
  erasedViewer: number | null;
  /** The HTTP request's (or the socket's) scope: its id, and what it ran and how it ended (for logs and metrics). */
  scope: RequestScope;
  loaders: Loaders;
  deps: ApiDeps;
  /** Only on a WebSocket connection (subscriptions). */
  live: LiveWatch | null;
}

/** The token's user: the viewer (created on first sight), or the id of an erased account. */
async function tokenHolderOf(deps: ApiDeps, authorization: string | undefined) {
  const { viewer, service } = await deps.auth.callerFrom(authorization);
  if (!viewer) return { viewer: null, erasedViewer: null, service };
  // Erased: being erased (this process heard), or erased before it started (no row comes back).
  if (deps.erasedUsers.has(viewer.id) || !(await deps.users.ensure(viewer.id, viewer.name))) {
    return { viewer: null, erasedViewer: viewer.id, service: null };
  }
  return { viewer, erasedViewer: null, service: null };
}

/** The token's viewer, refused once their erasure started. */
export async function viewerOf(deps: ApiDeps, authorization: string | undefined): Promise<Viewer | null> {
  const { viewer, erasedViewer, service } = await tokenHolderOf(deps, authorization);
  if (erasedViewer !== null) throw accountErased();
  if (service) throw forbidden('a service credential acts as no user');
  return viewer;
}

const clientOf = (viewer: Viewer | null, scope: RequestScope): Client => (viewer ? { userId: viewer.id } : { address: scope.client });

export function createContextFactory(deps: ApiDeps) {
  return async (authorization: string | undefined, scope: RequestScope): Promise<GraphQLContext> => {
    const { viewer, erasedViewer, service } = await tokenHolderOf(deps, authorization);
    return { viewer, erasedViewer, service, scope, loaders: createLoaders(deps, viewer, clientOf(viewer, scope)), deps, live: null };
  };
}

/** The context of one subscription on a socket whose viewer was authenticated at connection_init. */
export function socketContext(deps: ApiDeps, viewer: Viewer | null, scope: RequestScope, live: LiveWatch): GraphQLContext {
  const loaders = createLoaders(deps, viewer, clientOf(viewer, scope), { cache: false });
  return { viewer, erasedViewer: null, service: null, scope, loaders, deps, live };
}

/** The viewer, or UNAUTHENTICATED for operations that need one. */
export function requireViewer(ctx: GraphQLContext): Viewer {
  if (ctx.service) throw forbidden('a service credential acts as no user');
  if (!ctx.viewer) throw unauthenticated();
  return ctx.viewer;
}

/** The product's service making the request (FORBIDDEN for a user's token, UNAUTHENTICATED without a credential). */
export function requireService(ctx: GraphQLContext): Service {
  if (ctx.service) return ctx.service;
  if (ctx.viewer || ctx.erasedViewer !== null) throw forbidden('only a service credential registers or deletes entities');
  throw unauthenticated('a service credential is required');
}

/** Whose account `eraseAccount` erases: the viewer's, or (a retry) the erased token holder's. */
export function requireAccountHolder(ctx: GraphQLContext): number {
  return ctx.erasedViewer ?? requireViewer(ctx).id;
}
