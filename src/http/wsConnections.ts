// Who may hold a live-counts socket, and for how long: the token at connection_init (4403 when
// bad), the client's place among its sockets across the deployment (1008 when it has too
// many, 1013 when they cannot be counted now), and closes when the token expires or its
// account is erased (4403).
import type { IncomingMessage } from 'node:http';
import { CloseCode, type Context } from 'graphql-ws';
import type { Logger } from 'pino';
import type { WebSocket } from 'ws';
import type { Viewer } from '../auth/jwt.js';
import type { Config } from '../config.js';
import type { ApiDeps } from '../graphql/apiDeps.js';
import { type LiveWatch, viewerOf } from '../graphql/context.js';
import { clientAddress } from '../limits/clientAddress.js';
import type { LiveCounts } from '../live/liveCounts.js';
import type { SocketLeases } from '../live/socketLeases.js';
import { createRequestScope, type RequestScope, requestIdFrom } from '../requestScope.js';

export const CLOSE = {
  goingAway: 1001,
  policy: 1008,
  tooLarge: 1009,
  tryAgainLater: 1013,
  forbidden: 4403,
} as const;

/**
 * Close codes as metric labels: the ones the server sends (its own, graphql-ws's) and the
 * usual endings; a client may close with any of 4000-4999, each of which would be a new series.
 */
const CLOSE_CODE_LABELS = new Set([1000, 1005, 1006, ...Object.values(CLOSE), ...Object.values(CloseCode)].map(String));
export const closeCodeLabel = (code: number | undefined) => (CLOSE_CODE_LABELS.has(String(code)) ? String(code) : 'other');

/** Longest single timer Node keeps (about 24.8 days); longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;

export const closeSocket = (socket: WebSocket, code: number, reason: string) => {
  if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) socket.close(code, reason);
};

/** What a connection keeps between its messages. */
export interface Connection {
  scope: RequestScope;
  viewer: Viewer | null;
  /** Gives back this connection's place among its client's sockets (src/live/socketLeases.ts). */
  releasePlace: (() => void) | null;
  expiry: NodeJS.Timeout | null;
  live: LiveWatch;
}

export type Extra = { socket: WebSocket; request: IncomingMessage; connection?: Connection };
export type SocketContext = Context<Record<string, unknown>, Extra>;

export interface ConnectionPolicyDeps {
  api: ApiDeps;
  live: LiveCounts;
  /** Each client's sockets, counted across the deployment (WS_MAX_CONNECTIONS_PER_CLIENT). */
  sockets: SocketLeases;
  settings: Config['websocket'];
  trustProxyHops: number;
  logger: Logger;
}

export function createConnectionPolicy(deps: ConnectionPolicyDeps) {
  const { settings, logger } = deps;
  /** Acknowledged connections, so draining can wait for their subscriptions to complete. */
  const connected = new Set<SocketContext>();

  /** Closes the socket when its token expires (timers re-armed past Node's longest). */
  function closeAtExpiry(socket: WebSocket, connection: Connection, validUntilMs: number) {
    if (!Number.isFinite(validUntilMs)) return;
    const wait = validUntilMs - Date.now();
    connection.expiry = setTimeout(
      () => (wait > MAX_TIMER_MS ? closeAtExpiry(socket, connection, validUntilMs) : closeSocket(socket, CLOSE.forbidden, 'token expired')),
      Math.max(0, Math.min(wait, MAX_TIMER_MS)),
    );
    connection.expiry.unref();
  }

  // An erased user's sockets close at once: their token no longer works.
  deps.api.erasedUsers.onErased((userId) => {
    for (const ctx of connected) {
      if (ctx.extra.connection?.viewer?.id === userId) closeSocket(ctx.extra.socket, CLOSE.forbidden, 'account erased');
    }
  });

  /** The token's viewer (undefined when refused), from `authorization` in any letter case (clients copy their HTTP header's spelling). */
  async function viewerFrom(params: Record<string, unknown>): Promise<Viewer | null | undefined> {
    const authorization = params[Object.keys(params).find((key) => key.toLowerCase() === 'authorization') ?? 'authorization'];
    try {
      if (authorization !== undefined && typeof authorization !== 'string') throw new Error('authorization must be a string');
      return await viewerOf(deps.api, authorization);
    } catch {
      return undefined;
    }
  }

  return {
    connected,

    /** connection_init: whether the socket may stay (false: graphql-ws closes it with 4403, unless closed here already). */
    async connect(ctx: SocketContext): Promise<boolean> {
      const { socket, request } = ctx.extra;
      const scope = createRequestScope(requestIdFrom(request.headers['x-request-id']), clientAddress(request, deps.trustProxyHops));
      const viewer = await viewerFrom(ctx.connectionParams ?? {});
      if (viewer === undefined) return false;
      const client = viewer ? `u:${viewer.id}` : `a:${scope.client}`;
      let releasePlace: (() => void) | null;
      try {
        releasePlace = await deps.sockets.take(client, settings.maxConnectionsPerClient);
      } catch (error) {
        logger.warn({ err: error }, 'websocket: could not count the client’s sockets');
        closeSocket(socket, CLOSE.tryAgainLater, 'the service cannot take sockets right now');
        return false;
      }
      if (!releasePlace) {
        closeSocket(socket, CLOSE.policy, `too many connections for this client (at most ${settings.maxConnectionsPerClient})`);
        return false;
      }
      // Closed while its place was being taken: onClose found nothing to give back.
      if (socket.readyState !== socket.OPEN) {
        releasePlace();
        return false;
      }
      const onStall = () => closeSocket(socket, CLOSE.tryAgainLater, 'the client does not read its pushes');
      const connection: Connection = {
        scope,
        viewer,
        releasePlace,
        expiry: null,
        live: {
          maxIds: settings.maxIds,
          posts: (ids) => deps.live.watchPosts(ids, { onStall }),
          users: (ids) => deps.live.watchUsers(ids, { onStall }),
          entities: (type, ids) => deps.live.watchEntities(type, ids, { onStall }),
        },
      };
      ctx.extra.connection = connection;
      connected.add(ctx);
      if (viewer) closeAtExpiry(socket, connection, viewer.validUntilMs);
      return true;
    },

    /** The socket closed: its timer stops and its place is given back. */
    disconnect(ctx: SocketContext) {
      connected.delete(ctx);
      const connection = ctx.extra.connection;
      if (!connection) return;
      if (connection.expiry) clearTimeout(connection.expiry);
      connection.releasePlace?.();
      connection.releasePlace = null;
    },
  };
}
