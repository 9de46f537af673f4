// Baseline (d) of the feed, the ceiling (docs/performance.md, "The bench").
import type { IncomingMessage, ServerResponse } from 'node:http';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { type ExecutionResult, GraphQLError, parse, validate } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { resolvers, typeDefs } from '../../src/graphql/schema.js';
import { listenHttp, readJson } from './common.js';
import { startTallyCore } from './tallyCore.js';

type Body = { query?: unknown; variables?: Record<string, unknown> | null; operationName?: string };

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
  // A request the server refuses (bad JSON or query, a bad token) is the client's error.
  const statusOf = (error: unknown) => (error instanceof GraphQLError || error instanceof SyntaxError ? 400 : 500);
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const body: Body = (await readJson(req)) ?? {};
    if (typeof body.query !== 'string') throw new GraphQLError('"query" must be a string');
    const query = compile(body.query, body.operationName);
    const [status, answer] = isCompiledQuery(query)
      ? [200, query.stringify(await query.query(undefined, await core.contextOf(req), body.variables ?? {}))]
      : [400, JSON.stringify(query)];
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(answer);
  };
  const http = await listenHttp(env, handle, statusOf);
  return { url: http.url, redisStats: core.redisStats, stop: () => http.stop().then(core.stop) };
}
