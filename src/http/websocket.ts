// Live counts over WebSocket: GraphQL over WebSocket (graphql-ws, subprotocol
// `graphql-transport-ws`) on the HTTP server's port and path. This module is the transport:
// upgrades, the graphql-ws server (src/http/graphqlWsTransport.ts) and draining; who may hold
// a socket is src/http/wsConnections.ts, what a subscription must pass
// src/http/wsSubscriptions.ts. Close codes: 4403 bad or expired token, 4408 no
// connection_init in time, 1008 too many connections for one client (counted across
// replicas), 1009 message too large, 1013 a socket that does not read its pushes (or its
// client's sockets cannot be counted now), 1001 server shutting down. Too many sockets from
// one address that have not sent connection_init: the upgrade answers 429.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { GraphQLSchema } from 'graphql';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Config } from '../config.js';
import type { ApiDeps } from '../graphql/apiDeps.js';
import { socketContext } from '../graphql/context.js';
import type { DocumentLimits } from '../graphql/limits.js';
import { clientAddress } from '../limits/clientAddress.js';
import type { LiveCounts } from '../live/liveCounts.js';
import type { SocketLeases } from '../live/socketLeases.js';
import type { Metrics } from '../metrics.js';
import { serveGraphqlWs } from './graphqlWsTransport.js';
import { createHoldsPerKey } from './holdsPerKey.js';
import { CLOSE, closeCodeLabel, closeSocket, createConnectionPolicy, type Extra } from './wsConnections.js';
import { createSubscriptionChecks } from './wsSubscriptions.js';

export { CLOSE };

/** How long draining waits for queued pushes to reach a socket before closing it. */
const DRAIN_MS = 2000;

export interface WebSocketDeps {
  schema: GraphQLSchema;
  api: ApiDeps;
  live: LiveCounts;
  /** Each client's sockets, counted across the deployment (WS_MAX_CONNECTIONS_PER_CLIENT). */
  sockets: SocketLeases;
  settings: Config['websocket'];
  /** The same document limits as over HTTP. */
  documentLimits: Pick<DocumentLimits, 'check'>;
  production: boolean;
  trustProxyHops: number;
  metrics: Metrics;
  logger: Logger;
}

export function attachWebSocket(server: Server, deps: WebSocketDeps) {
  const { settings, logger, metrics } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxMessageBytes });
  /** Sockets that have not sent connection_init yet, by address; and how each stops counting. */
  const uninitialised = createHoldsPerKey(settings.maxConnectionsPerClient);
  const initialisedBy = new WeakMap<WebSocket, () => void>();
  const policy = createConnectionPolicy({ ...deps, settings });
  const checks = createSubscriptionChecks({ ...deps, maxSubscriptions: settings.maxSubscriptions });
  let draining = false;

  const transport = serveGraphqlWs<Extra>(
    {
      schema: deps.schema,
      subscribe: checks.subscribe,
      connectionInitWaitTimeout: settings.initTimeoutMs,
      onConnect: (ctx) => {
        initialisedBy.get(ctx.extra.socket)?.();
        return policy.connect(ctx);
      },
      onSubscribe: (ctx, _id, payload) => {
        const { viewer, scope, live } = ctx.extra.connection!;
        return checks.start(payload, Object.keys(ctx.subscriptions).length, socketContext(deps.api, viewer, scope, live));
      },
      onNext: (ctx, _id, _payload, _args, result) => {
        if (ctx.extra.socket.bufferedAmount > settings.maxBufferedBytes) {
          closeSocket(ctx.extra.socket, CLOSE.tryAgainLater, 'the client does not read its pushes');
        }
        return result.errors ? { ...result, errors: checks.formatPush(result.errors) } : (result as never);
      },
      onError: (_ctx, _id, _payload, errors) => checks.format(errors),
      onClose: (ctx, code) => {
        policy.disconnect(ctx);
        metrics.liveClosed.inc({ code: closeCodeLabel(code) });
      },
    },
    wss,
    { keepAliveMs: settings.pingIntervalMs, logger },
  );

  const refuseUpgrade = (socket: Duplex, status: string) => {
    // A client that resets meanwhile must not crash the process (an unhandled 'error').
    socket.on('error', () => socket.destroy());
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\n\r\n`);
  };
  const onUpgrade = (request: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (request.url ?? '/').split('?')[0];
    if (path !== '/graphql' || draining) return refuseUpgrade(socket, draining ? '503 Service Unavailable' : '404 Not Found');
    // Sockets that have not sent connection_init belong to no user yet: they count against
    // their address (up to WS_INIT_TIMEOUT_MS each), so one address cannot hold them all.
    const address = clientAddress(request, deps.trustProxyHops);
    if (uninitialised.full(address)) return refuseUpgrade(socket, '429 Too Many Requests');
    wss.handleUpgrade(request, socket, head, (ws) => {
      metrics.liveSockets.inc();
      const initialised = uninitialised.hold(address);
      initialisedBy.set(ws, initialised);
      ws.once('close', () => {
        initialised();
        metrics.liveSockets.dec();
      });
      transport.open(ws, socket, { socket: ws, request });
    });
  };
  server.on('upgrade', onUpgrade);

  return {
    /** Sockets open now. */
    sockets: () => wss.clients.size,

    /**
     * Stops taking sockets, ends every subscription (clients get `complete`), lets queued
     * pushes reach their sockets (up to DRAIN_MS), then closes every socket with 1001.
     */
    async close(): Promise<void> {
      draining = true;
      server.off('upgrade', onUpgrade);
      deps.live.close();
      deps.sockets.close();
      const deadline = Date.now() + DRAIN_MS;
      const busy = () =>
        [...policy.connected].some((ctx) => Object.keys(ctx.subscriptions).length > 0) ||
        [...wss.clients].some((socket) => socket.bufferedAmount > 0);
      while (Date.now() < deadline && busy()) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const socket of wss.clients) closeSocket(socket, CLOSE.goingAway, 'server shutting down');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type WebSocketEndpoint = ReturnType<typeof attachWebSocket>;
