// Baseline (d) for the feed, the practical ceiling: Tally's schema, resolvers and
// per-request context (the same DataLoaders on the same clients, the same JWT check) run by
// graphql-jit behind plain node:http. No Apollo pipeline and no plugins:
// parse the JSON body, run the query compiled once per document, write the JSON result.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { type DocumentNode, type ExecutionResult, GraphQLError, parse, validate } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { resolvers, typeDefs } from '../../src/graphql/schema.js';
import { createRequestScope, requestIdFrom } from '../../src/requestScope.js';
import { startTallyCore } from '../lib/tallyCore.js';

interface GraphQLBody {
  query?: unknown;
  variables?: Record<string, unknown> | null;
  operationName?: string | null;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

function send(res: ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(body);
}

const errorBody = (...errors: readonly GraphQLError[]) => JSON.stringify({ errors });

export async function startJitFeedServer(env: NodeJS.ProcessEnv) {
  const core = await startTallyCore(env);
  const schema = makeExecutableSchema({ typeDefs, resolvers });
  // Compiled once per document and operation name; unbounded, as the bench sends only a few.
  const compiled = new Map<string, CompiledQuery | ExecutionResult>();

  function compile(query: string, operationName: string | undefined): CompiledQuery | ExecutionResult {
    const cacheKey = `${operationName ?? ''}\n${query}`;
    let entry = compiled.get(cacheKey);
    if (!entry) {
      let document: DocumentNode;
      try {
        document = parse(query);
      } catch (error) {
        return { errors: [error as GraphQLError] };
      }
      const errors = validate(schema, document);
      entry = errors.length > 0 ? { errors } : compileQuery(schema, document, operationName);
      compiled.set(cacheKey, entry);
    }
    return entry;
  }

  async function handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== 'POST') return send(res, 405, errorBody(new GraphQLError('POST a JSON body')));
    let body: GraphQLBody;
    try {
      body = JSON.parse(await readBody(req)) as GraphQLBody;
    } catch {
      return send(res, 400, errorBody(new GraphQLError('request body is not valid JSON')));
    }
    if (typeof body.query !== 'string') return send(res, 400, errorBody(new GraphQLError('"query" must be a string')));
    const query = compile(body.query, body.operationName ?? undefined);
    if (!isCompiledQuery(query)) return send(res, 400, JSON.stringify(query));

    let context: Awaited<ReturnType<typeof core.context>>;
    try {
      context = await core.context(
        req.headers.authorization,
        createRequestScope(requestIdFrom(req.headers['x-request-id']), req.socket.remoteAddress ?? 'unknown'),
      );
    } catch (error) {
      if (error instanceof GraphQLError) return send(res, 401, errorBody(error));
      throw error;
    }
    const result = await query.query(undefined, context, body.variables ?? {});
    send(res, 200, query.stringify(result));
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.end();
      send(res, 500, errorBody(new GraphQLError(`internal server error: ${String(error)}`)));
    });
  });
  const host = env.HOST || '127.0.0.1';
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(Number(env.PORT ?? 0), host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;

  return {
    url: `http://${host}:${port}`,
    redisStats: core.redisStats,
    async stop() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
      });
      await core.stop();
    },
  };
}
