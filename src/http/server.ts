// A small node:http front for Apollo (the documented integration API,
// `executeHTTPGraphQLRequest`) plus the health endpoints. Kept framework-free: it is on the
// hot path of every feed request.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { HeaderMap } from '@apollo/server';
import type { Logger } from 'pino';
import type { Apollo } from '../graphql/apollo.js';
import type { GraphQLContext } from '../graphql/context.js';
import { ErrorCode } from '../errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

export interface HttpDeps {
  /** Null in a worker-only process: it serves the health endpoints alone. */
  apollo: Apollo | null;
  context: (authorization: string | undefined) => Promise<GraphQLContext>;
  /** Resolves when every dependency answers; rejects with the reason otherwise. */
  readiness: () => Promise<void>;
  /** Prometheus exposition: content type and text. */
  metrics: () => Promise<{ contentType: string; body: string }>;
  logger: Logger;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function sendJson(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}

/** A GraphQL-shaped error for requests refused before they reach Apollo. */
function sendRequestError(res: ServerResponse, status: number, message: string) {
  sendJson(res, status, { errors: [{ message, extensions: { code: ErrorCode.BAD_USER_INPUT } }] });
}

async function readBody(req: IncomingMessage): Promise<string> {
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `request body exceeds ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function parseBody(req: IncomingMessage): Promise<unknown> {
  if (req.method !== 'POST') return undefined;
  const text = await readBody(req);
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

async function serveGraphQL(apollo: Apollo, deps: HttpDeps, req: IncomingMessage, res: ServerResponse, search: string) {
  const body = await parseBody(req);
  const response = await apollo.executeHTTPGraphQLRequest({
    httpGraphQLRequest: { method: req.method ?? 'GET', headers: headerMapOf(req), search, body },
    context: () => deps.context(req.headers.authorization),
  });
  for (const [key, value] of response.headers) res.setHeader(key, value);
  res.statusCode = response.status ?? 200;
  if (response.body.kind === 'complete') {
    res.end(response.body.string);
    return;
  }
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

async function serveReadiness(deps: HttpDeps, res: ServerResponse) {
  try {
    await deps.readiness();
    sendJson(res, 200, { status: 'ready' });
  } catch (error) {
    sendJson(res, 503, { status: 'not ready', reason: (error as Error).message });
  }
}

export function createHttpServer(deps: HttpDeps): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const handle = async () => {
      switch (url.pathname) {
        case '/graphql':
          if (!deps.apollo) return sendJson(res, 404, { error: 'this process runs ROLE=worker' });
          return serveGraphQL(deps.apollo, deps, req, res, url.search);
        case '/healthz':
          return sendJson(res, 200, { status: 'ok' });
        case '/readyz':
          return serveReadiness(deps, res);
        case '/metrics': {
          const { contentType, body } = await deps.metrics();
          res.writeHead(200, { 'content-type': contentType });
          return res.end(body);
        }
        default:
          return sendJson(res, 404, { error: 'not found' });
      }
    };
    handle().catch((error: unknown) => {
      if (error instanceof HttpError) {
        // Drain nothing more: the client may still be sending an oversized body.
        res.setHeader('connection', 'close');
        return sendRequestError(res, error.status, error.message);
      }
      deps.logger.error({ err: error }, 'unhandled error serving HTTP request');
      if (!res.headersSent) sendJson(res, 500, { errors: [{ message: 'internal server error', extensions: { code: ErrorCode.INTERNAL_SERVER_ERROR } }] });
      else res.end();
    });
  });
}
