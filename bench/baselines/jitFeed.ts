// Baseline (d) of the feed, the ceiling (docs/performance.md, "The bench"): Tally's schema, resolvers
// and request context run by graphql-jit on plain node:http, no Apollo pipeline and no plugins.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { type ExecutionResult, GraphQLError, parse, validate } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { resolvers, typeDefs } from '../../src/graphql/schema.js';
import { startTallyCore } from '../lib/tallyCore.js';
import { tallyContext } from './tallyContext.js';

type Body = { query?: unknown; variables?: Record<string, unknown> | null; operationName?: string };

async function readJson(req: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

function send(res: ServerResponse, status: number, body: string) {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(body);
}

export async function startJitFeedServer(env: NodeJS.ProcessEnv) {
  const core = await startTallyCore(env);
  const schema = makeExecutableSchema({ typeDefs, resolvers });
  // Once per document and operation name; unbounded, as the bench sends only a few.
  const compiled = new Map<string, CompiledQuery | ExecutionResult>();
  const compile = (query: string, operationName: string | undefined) => {
    const cacheKey = `${operationName ?? ''}\n${query}`;
    let entry = compiled.get(cacheKey);
    if (!entry) {
      const document = parse(query);
      const errors = validate(schema, document);
      entry = errors.length > 0 ? { errors } : compileQuery(schema, document, operationName);
      compiled.set(cacheKey, entry);
    }
    return entry;
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const body = await readJson(req);
    if (typeof body.query !== 'string') throw new GraphQLError('"query" must be a string');
    const query = compile(body.query, body.operationName);
    if (!isCompiledQuery(query)) return send(res, 400, JSON.stringify(query));
    const context = await tallyContext(core, req);
    send(res, 200, query.stringify(await query.query(undefined, context, body.variables ?? {})));
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.end();
      // A request the server refuses (bad JSON or query, a bad token) is the client's error.
      const status = error instanceof GraphQLError || error instanceof SyntaxError ? 400 : 500;
      send(res, status, JSON.stringify({ errors: [{ message: String((error as Error).message ?? error) }] }));
    });
  });
  const host = env.HOST || '127.0.0.1';
  await new Promise<void>((resolve, reject) => http.once('error', reject).listen(Number(env.PORT ?? 0), host, resolve));
  return {
    url: `http://${host}:${(http.address() as AddressInfo).port}`,
    redisStats: core.redisStats,
    async stop() {
      await new Promise((resolve) => http.close(resolve).closeIdleConnections());
      await core.stop();
    },
  };
}
