// Live counts over WebSocket: GraphQL over WebSocket (graphql-ws, subprotocol
// `graphql-transport-ws`) on the HTTP server's port and path. Only subscriptions run here
// (queries and mutations go over HTTP, with its limits and budgets); documents meet the same
// limits as over HTTP. Close codes: 4403 bad or expired token, 4408 no connection_init in
// time, 1008 too many connections for one client (counted across replicas), 1009 message too
// large, 1013 a socket that does not read its pushes (or its client's sockets cannot be
// counted now), 1001 server shutting down. Too many sockets from one address that have not
// sent connection_init: the upgrade answers 429.
import type { IncomingMessage, Server } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  type DocumentNode,
  type ExecutionArgs,
  type ExecutionResult,
  GraphQLError,
  type GraphQLFormattedError,
  type GraphQLSchema,
  getOperationAST,
  parse,
  specifiedRules,
  type ValidationRule,
  validate,
} from 'graphql';
import { CloseCode, type Context } from 'graphql-ws';
import type { Logger } from 'pino';
import { type WebSocket, WebSocketServer } from 'ws';
import type { Viewer } from '../auth/jwt.js';
import type { Config } from '../config.js';
import { badInput, ErrorCode, formatError } from '../errors.js';
import type { ApiDeps } from '../graphql/apiDeps.js';
import { type LiveWatch, socketContext, viewerOf } from '../graphql/context.js';
import { operationCost } from '../graphql/cost.js';
import { oversizedDocument, tooCostly, tooLarge } from '../graphql/limits.js';
import { createSharedSubscribe } from '../graphql/sharedSubscribe.js';
import { clientAddress } from '../limits/clientAddress.js';
import type { LiveCounts } from '../live/liveCounts.js';
import type { SocketLeases } from '../live/socketLeases.js';
import type { Metrics } from '../metrics.js';
import { createRequestScope, type RequestScope, requestIdFrom } from '../requestScope.js';
import { serveGraphqlWs } from './graphqlWsTransport.js';
import { createHoldsPerKey } from './holdsPerKey.js';

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
const closeCodeLabel = (code: number | undefined) => (CLOSE_CODE_LABELS.has(String(code)) ? String(code) : 'other');

/** Longest single timer Node keeps (about 24.8 days); longer waits re-arm. */
const MAX_TIMER_MS = 2 ** 31 - 1;
/** How long draining waits for queued pushes to reach a socket before closing it. */
const DRAIN_MS = 2000;

export interface WebSocketDeps {
  schema: GraphQLSchema;
  api: ApiDeps;
  live: LiveCounts;
  /** Each client's sockets, counted across the deployment (WS_MAX_CONNECTIONS_PER_CLIENT). */
  sockets: SocketLeases;
  settings: Config['websocket'];
  validationRules: readonly ValidationRule[];
  /** Tokens, bytes and cost a document may have (as over HTTP). */
  limits: Pick<Config['limits'], 'tokens' | 'queryBytes' | 'cost'>;
  production: boolean;
  trustProxyHops: number;
  metrics: Metrics;
  logger: Logger;
}

/** What a connection keeps between its messages. */
interface Connection {
  scope: RequestScope;
  viewer: Viewer | null;
  /** Gives back this connection's place among its client's sockets (src/live/socketLeases.ts). */
  releasePlace: (() => void) | null;
  expiry: NodeJS.Timeout | null;
  live: LiveWatch;
}

type Extra = { socket: WebSocket; request: IncomingMessage; connection?: Connection };

const asInput = (error: GraphQLError) =>
  new GraphQLError(error.message, {
    nodes: error.nodes,
    source: error.source,
    positions: error.positions,
    extensions: { code: ErrorCode.BAD_USER_INPUT },
  });

/**
 * A refusal before a stream started: the root field's own error (it has a path) as it is; the
 * executor's (variables that do not coerce, no path) the client's input.
 */
const refusal = (error: GraphQLError) => (error.path || error.extensions.code ? error : asInput(error));

export function attachWebSocket(server: Server, deps: WebSocketDeps) {
  const { settings, logger, metrics } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: settings.maxMessageBytes });
  /** Sockets that have not sent connection_init yet, by address; and how each stops counting. */
  const uninitialised = createHoldsPerKey(settings.maxConnectionsPerClient);
  const initialisedBy = new WeakMap<WebSocket, () => void>();
  /** Acknowledged connections, so draining can wait for their subscriptions to complete. */
  const connected = new Set<Context<Record<string, unknown>, Extra>>();
  let draining = false;

  const closeSocket = (socket: WebSocket, code: number, reason: string) => {
    if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING) socket.close(code, reason);
  };

  // `extensions.http` is for HTTP responses (Apollo strips it there); a socket has no status.
  const withoutHttp = (formatted: GraphQLFormattedError): GraphQLFormattedError => {
    if (!formatted.extensions?.http) return formatted;
    const { http: _, ...extensions } = formatted.extensions;
    return { ...formatted, extensions };
  };
  const format = (errors: readonly GraphQLError[]): GraphQLFormattedError[] =>
    errors.map((error) =>
      formatError(withoutHttp(error.toJSON()), error, {
        exposeDetails: !deps.production,
        onInternal: (cause) => logger.error({ err: cause }, 'unexpected error in a subscription'),
      }),
    );

  // A shared push (graphql/sharedSubscribe.ts) carries one errors array to every subscriber:
  // formatted, and an internal error logged, once, not once per socket.
  const formattedPushErrors = new WeakMap<readonly GraphQLError[], GraphQLFormattedError[]>();
  const formatPushErrors = (errors: readonly GraphQLError[]): GraphQLFormattedError[] => {
    let formatted = formattedPushErrors.get(errors);
    if (!formatted) {
      formatted = format(errors);
      formattedPushErrors.set(errors, formatted);
    }
    return formatted;
  };

  const checkDocument = (
    query: string,
    operationName: string | null | undefined,
    variables: Record<string, unknown> | null | undefined,
  ): DocumentNode | readonly GraphQLError[] => {
    const { limits } = deps;
    const oversized = oversizedDocument(query, limits.queryBytes);
    if (oversized !== null) return [tooLarge(oversized, limits.queryBytes)];
    let document: DocumentNode;
    try {
      document = parse(query, { maxTokens: limits.tokens });
    } catch (error) {
      return [asInput(error as GraphQLError)];
    }
    const errors = validate(deps.schema, document, [...specifiedRules, ...deps.validationRules]);
    if (errors.length > 0) return errors.map(asInput);
    const operation = getOperationAST(document, operationName);
    if (!operation) return [badInput('the document must name one operation to run (operationName)')];
    if (operation.operation !== 'subscription') {
      return [badInput('only subscriptions are served over WebSocket; send queries and mutations over HTTP')];
    }
    const cost = operationCost(deps.schema, { document, operation, variables: variables ?? undefined });
    if (cost !== null && cost > limits.cost) return [tooCostly(cost, limits.cost)];
    return document;
  };

  function release(connection: Connection | undefined) {
    if (!connection) return;
    if (connection.expiry) clearTimeout(connection.expiry);
    connection.releasePlace?.();
    connection.releasePlace = null;
  }

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

  const subscribe = createSharedSubscribe();
  /** Streams onSubscribe started, handed to graphql-ws when it runs their arguments. */
  const started = new WeakMap<ExecutionArgs, AsyncIterable<ExecutionResult>>();

  const transport = serveGraphqlWs<Extra>(
    {
      schema: deps.schema,
      subscribe: (args) => started.get(args) ?? subscribe(args),
      connectionInitWaitTimeout: settings.initTimeoutMs,
      onConnect: async (ctx) => {
        const { socket, request } = ctx.extra;
        initialisedBy.get(socket)?.();
        const scope = createRequestScope(requestIdFrom(request.headers['x-request-id']), clientAddress(request, deps.trustProxyHops));
        // `authorization`, in any letter case (clients copy their HTTP header's spelling).
        const params = ctx.connectionParams ?? {};
        const authorization = params[Object.keys(params).find((key) => key.toLowerCase() === 'authorization') ?? 'authorization'];
        let viewer: Viewer | null;
        try {
          if (authorization !== undefined && typeof authorization !== 'string') throw new Error('authorization must be a string');
          viewer = await viewerOf(deps.api, authorization);
        } catch {
          return false; // graphql-ws closes with 4403 Forbidden
        }
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
          },
        };
        ctx.extra.connection = connection;
        connected.add(ctx);
        if (viewer) closeAtExpiry(socket, connection, viewer.validUntilMs);
        return true;
      },
      onSubscribe: async (ctx, _id, payload) => {
        const connection = ctx.extra.connection!;
        // graphql-ws registers the subscription before asking: it is among those counted.
        const open = Object.keys(ctx.subscriptions).length;
        if (open > settings.maxSubscriptions) {
          return [badInput(`at most ${settings.maxSubscriptions} subscriptions per connection (WS_MAX_SUBSCRIPTIONS)`)];
        }
        const document = checkDocument(payload.query, payload.operationName, payload.variables);
        if (!('kind' in document)) return document; // errors: onError formats them
        const args: ExecutionArgs = {
          schema: deps.schema,
          document,
          operationName: payload.operationName,
          variableValues: payload.variables,
          contextValue: socketContext(deps.api, connection.viewer, connection.scope, connection.live),
        };
        // The stream starts here, so that what refuses it (bad ids, variables that do not
        // coerce) answers an `error` message: from graphql-ws's subscribe it would be a
        // result with errors, sent as `next` and `complete`.
        const stream = await subscribe(args);
        if (!(Symbol.asyncIterator in stream)) return (stream.errors ?? []).map(refusal);
        started.set(args, stream);
        return args;
      },
      onNext: (ctx, _id, _payload, _args, result) => {
        if (ctx.extra.socket.bufferedAmount > settings.maxBufferedBytes) {
          closeSocket(ctx.extra.socket, CLOSE.tryAgainLater, 'the client does not read its pushes');
        }
        return result.errors ? { ...result, errors: formatPushErrors(result.errors) } : (result as never);
      },
      onError: (_ctx, _id, _payload, errors) => format(errors),
      onClose: (ctx, code) => {
        connected.delete(ctx);
        release(ctx.extra.connection);
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
        [...connected].some((ctx) => Object.keys(ctx.subscriptions).length > 0) ||
        [...wss.clients].some((socket) => socket.bufferedAmount > 0);
      while (Date.now() < deadline && busy()) await new Promise((resolve) => setTimeout(resolve, 10));
      for (const socket of wss.clients) closeSocket(socket, CLOSE.goingAway, 'server shutting down');
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}

export type WebSocketEndpoint = ReturnType<typeof attachWebSocket>;
export type { Context as WebSocketContext };
