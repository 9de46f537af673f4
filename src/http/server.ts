// A small node:http front for Apollo (the documented integration API,
// `executeHTTPGraphQLRequest`) plus the health and metrics endpoints. Kept framework-free: it
// is on the hot path of every feed request. Each GraphQL request gets an id (returned in
// `x-request-id`), a body limit, an execution deadline, a log line and its metrics.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { HeaderMap } from '@apollo/server';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { ErrorCode } from '../errors.js';
import type { Apollo } from '../graphql/apollo.js';
import type { GraphQLContext } from '../graphql/context.js';
import type { DocumentLimits } from '../graphql/limits.js';
import { clientAddress } from '../limits/clientAddress.js';
import type { Metrics } from '../metrics.js';
import { createRequestScope, type RequestScope, requestIdFrom } from '../requestScope.js';
import { GRAPHIQL_ASSET_PREFIX, prefersHtml, sendGraphiQLPage, serveGraphiQLAsset } from './graphiql.js';
import { sendMetrics } from './metricsEndpoint.js';

export interface HttpLimits {
  bodyBytes: number;
  executionTimeoutMs: number;
}

export interface HttpDeps {
  /** Null in a worker-only process: it serves the health endpoints alone. */
  apollo: Apollo | null;
  /** Serve GraphiQL to browsers at GET /graphql, with its assets under /graphiql/. */
  graphiql?: boolean;
  context: (authorization: string | undefined, scope: RequestScope) => Promise<GraphQLContext>;
  /** Resolves when every dependency answers; rejects with the reason otherwise. */
  readiness: () => Promise<void>;
  /** /readyz answers 503 when `readiness` has not resolved within this long. */
  readinessTimeoutMs: number;
  /** True once shutdown began: /readyz turns false so load balancers stop sending traffic. */
  isDraining: () => boolean;
  metrics: Metrics;
  /** Where this listener serves the metrics; null when they have a listener of their own. */
  metricsPath: string | null;
  limits: HttpLimits;
  /** A document's own size (a query in the body or the URL) is checked before Apollo hashes or parses it. */
  documentLimits: Pick<DocumentLimits, 'sizeRefusal'>;
  connections: Config['http'];
  /** Proxies in front whose X-Forwarded-For entries name the client (src/limits/clientAddress.ts). */
  trustProxyHops: number;
  logger: Logger;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** The outcome of a request whose client went away (or was cut for being too slow) before the answer. */
const ABORTED = 'aborted';

/** The error a request stream fails with when its client closed the connection (or Node cut it). */
const isClientAbort = (error: unknown) => (error as NodeJS.ErrnoException | undefined)?.code === 'ECONNRESET';

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** A GraphQL-shaped error for requests refused before they reach Apollo. */
function sendRequestError(res: ServerResponse, status: number, message: string) {
  sendJson(res, status, { errors: [{ message, extensions: { code: ErrorCode.BAD_USER_INPUT } }] });
}

// Refuses malformed UTF-8 instead of storing U+FFFD in its place.
const utf8 = new TextDecoder('utf-8', { fatal: true });

// Events rather than `for await`: an async iterator per request costs a feed request more
// than reading its few hundred bytes.
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const tooLarge = () => new HttpError(413, `request body exceeds ${limit} bytes`);
  if (Number(req.headers['content-length'] ?? 0) > limit) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        req.removeAllListeners('data');
        req.pause();
        reject(tooLarge());
      } else chunks.push(chunk);
    });
    req.once('end', () => {
      try {
        resolve(utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
      } catch {
        reject(new HttpError(400, 'request body is not valid UTF-8'));
      }
    });
    req.once('error', reject);
  });
}

async function parseBody(req: IncomingMessage, limit: number): Promise<unknown> {
  if (req.method !== 'POST') return undefined;
  const text = await readBody(req, limit);
  const type = req.headers['content-type'] ?? '';
  if (!/^application\/(graphql-response\+)?json\b/i.test(type)) return text;
  try {
    return JSON.parse(text);
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

function headerMapOf(req: IncomingMessage): HeaderMap {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  }
  return headers;
}

const TIMED_OUT = Symbol('timed out');

/** The promise's value, or TIMED_OUT once `ms` passed (the work itself goes on and is dropped). */
function withDeadline<T>(work: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  return Promise.race([work, deadline]).finally(() => clearTimeout(timer));
}

/** How a response that no plugin described ended, from its status. */
const outcomeOfStatus = (status: number) =>
  status < 400
    ? 'ok'
    : status === 401
      ? ErrorCode.UNAUTHENTICATED
      : status >= 500
        ? ErrorCode.INTERNAL_SERVER_ERROR
        : ErrorCode.BAD_USER_INPUT;

function record(deps: HttpDeps, scope: RequestScope) {
  const operation = scope.operation ?? 'unknown';
  const outcome = scope.outcome ?? 'ok';
  const ms = Date.now() - scope.startedAt;
  deps.metrics.recordRequest(operation, outcome, ms / 1000);
  deps.logger.info({ requestId: scope.id, operation, outcome, ms }, 'graphql request');
}

async function serveGraphQL(apollo: Apollo, deps: HttpDeps, req: IncomingMessage, res: ServerResponse, search: string) {
  const id = requestIdFrom(req.headers['x-request-id']);
  res.setHeader('x-request-id', id);
  const scope = createRequestScope(id, clientAddress(req, deps.trustProxyHops));
  // Recorded once the response is done; one that closed before it was whole was abandoned by
  // its client (or cut by a timeout), which is not the service's error.
  res.once('close', () => {
    if (!res.writableFinished) scope.outcome = ABORTED;
    record(deps, scope);
  });
  try {
    const body = await parseBody(req, deps.limits.bodyBytes);
    const query = body === undefined ? new URLSearchParams(search).get('query') : (body as { query?: unknown } | null)?.query;
    const tooLarge = deps.documentLimits.sizeRefusal(query);
    if (tooLarge) throw new HttpError(400, tooLarge.message);
    const response = await withDeadline(
      apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMapOf(req), search, body },
        context: () => deps.context(req.headers.authorization, scope),
      }),
      deps.limits.executionTimeoutMs,
    );
    if (response === TIMED_OUT) {
      scope.outcome = ErrorCode.INTERNAL_SERVER_ERROR;
      const message = `execution took longer than ${deps.limits.executionTimeoutMs} ms and was abandoned`;
      // A mutation's changes may or may not have been made: retrying with the same idempotency keys is safe.
      const unknown = scope.operation?.startsWith('mutation') ? { outcome: 'UNKNOWN', retryable: true } : { retryable: true };
      return sendJson(res, 503, { errors: [{ message, extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR, ...unknown } }] });
    }
    scope.outcome ??= outcomeOfStatus(response.status ?? 200);
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') {
      res.end(response.body.string);
      return;
    }
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  } catch (error) {
    if (isClientAbort(error)) return; // nobody to answer
    scope.outcome = error instanceof HttpError ? outcomeOfStatus(error.status) : ErrorCode.INTERNAL_SERVER_ERROR;
    throw error;
  }
}

async function serveReadiness(deps: HttpDeps, res: ServerResponse) {
  if (deps.isDraining()) return sendJson(res, 503, { status: 'draining' });
  try {
    const ready = await withDeadline(deps.readiness(), deps.readinessTimeoutMs);
    if (ready === TIMED_OUT) throw new Error(`a dependency did not answer within ${deps.readinessTimeoutMs} ms`);
    sendJson(res, 200, { status: 'ready' });
  } catch (error) {
    // The reason names hosts and drivers: it goes to the log, not to whoever asks.
    deps.logger.warn({ err: error }, 'not ready');
    sendJson(res, 503, { status: 'not ready' });
  }
}

/**
 * Slow and idle clients are cut, so connections cannot be held open for free: headers and
 * whole requests must arrive in time (Node answers 408 and closes), kept-alive connections
 * wait a bounded time for their next request, a connection quiet in both directions is
 * closed, and past `maxConnections` new ones are refused at once.
 */
function limitConnections(server: Server, limits: Config['http']): Server {
  server.headersTimeout = limits.headersTimeoutMs;
  server.requestTimeout = limits.requestTimeoutMs;
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  server.setTimeout(limits.idleTimeoutMs, (socket) => socket.destroy());
  return server;
}

export function createHttpServer(deps: HttpDeps): Server {
  // Node enforces the header and request timeouts on this check interval (30 s by default).
  const connectionsCheckingInterval = Math.min(1000, Math.ceil(deps.connections.headersTimeoutMs / 4));
  return limitConnections(
    createServer({ connectionsCheckingInterval }, (req, res) => {
      // The path and query string as sent (a WHATWG URL parse per request costs more than routing).
      const target = req.url ?? '/';
      const at = target.indexOf('?');
      const pathname = at === -1 ? target : target.slice(0, at);
      const search = at === -1 ? '' : target.slice(at);
      const handle = async () => {
        switch (pathname) {
          case '/graphql':
            if (!deps.apollo) return sendJson(res, 404, { error: 'this process runs ROLE=worker' });
            if (deps.graphiql && req.method === 'GET' && prefersHtml(req.headers.accept)) return sendGraphiQLPage(res);
            return serveGraphQL(deps.apollo, deps, req, res, search);
          case '/healthz':
            return sendJson(res, 200, { status: 'ok' });
          case '/readyz':
            return serveReadiness(deps, res);
          default:
            if (pathname === deps.metricsPath) return sendMetrics(res, deps.metrics);
            if (deps.graphiql && deps.apollo && pathname.startsWith(GRAPHIQL_ASSET_PREFIX)) {
              return serveGraphiQLAsset(req, res, pathname);
            }
            return sendJson(res, 404, { error: 'not found' });
        }
      };
      handle().catch((error: unknown) => {
        if (error instanceof HttpError) {
          // Drain nothing more: the client may still be sending an oversized body.
          res.setHeader('connection', 'close');
          return sendRequestError(res, error.status, error.message);
        }
        if (isClientAbort(error)) return;
        deps.logger.error({ err: error }, 'unhandled error serving HTTP request');
        if (!res.headersSent)
          sendJson(res, 500, { errors: [{ message: 'internal server error', extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR } }] });
        else res.end();
      });
    }),
    deps.connections,
  );
}
