// What the baselines share: Redis stats, the node:http front, the viewer, DateTime, keyset cursors, set-up SQL.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApolloServer, type ApolloServerOptionsWithTypeDefs, HeaderMap } from '@apollo/server';
import { GraphQLScalarType } from 'graphql';
import pg from 'pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import type { RedisClient } from '../../src/redis/client.js';
import { trackRoundTrips } from '../../src/redis/roundTrips.js';

export const POOL_SIZE = 10; // Tally's Prisma pool size
export type ViewerContext = { viewer: Viewer | null };
export type RedisStats = { roundTrips: number; commands: number };

export function trackRedis(redis: RedisClient, roundTrips = trackRoundTrips(redis)): () => RedisStats {
  let commands = 0;
  const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (...args: unknown[]) => {
    commands += 1;
    return send(...args);
  };
  return () => ({ roundTrips: roundTrips.count, commands });
}

export async function readJson(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

export async function listenHttp(
  env: NodeJS.ProcessEnv,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  statusOf: (error: unknown) => number = () => 500,
) {
  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      if (res.headersSent) return void res.end();
      res.writeHead(statusOf(error), { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify({ errors: [{ message: String((error as Error).message ?? error) }] }));
    });
  });
  const host = env.HOST || '127.0.0.1';
  await new Promise<void>((resolve, reject) => http.once('error', reject).listen(Number(env.PORT ?? 0), host, resolve));
  return {
    url: `http://${host}:${(http.address() as AddressInfo).port}`,
    stop: () => new Promise<void>((resolve) => http.close(() => resolve()).closeIdleConnections()),
  };
}

export async function serveWithViewer(
  env: NodeJS.ProcessEnv,
  typeDefs: string,
  resolvers: ApolloServerOptionsWithTypeDefs<ViewerContext>['resolvers'],
  close: () => Promise<unknown>,
) {
  const auth = createAuth(env.JWT_SECRET!);
  const apollo = new ApolloServer<ViewerContext>({ typeDefs, resolvers });
  await apollo.start();
  const http = await listenHttp(env, async (req, res) => {
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const search = new URL(req.url ?? '/', 'http://localhost').search;
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: { method: req.method ?? 'GET', headers, search, body: await readJson(req) },
      context: async () => ({ viewer: await auth.viewerFrom(req.headers.authorization) }),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') return void res.end(response.body.string);
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  });
  return {
    url: http.url,
    stop: () =>
      http
        .stop()
        .then(() => apollo.stop())
        .then(close),
  };
}

export const DateTime = new GraphQLScalarType<Date, string>({ name: 'DateTime', serialize: (value) => (value as Date).toISOString() });

export function feedPosition(after: string | null | undefined): { at: Date; id: bigint } | null {
  if (!after) return null;
  const [at, id] = Buffer.from(after, 'base64url').toString().split(':');
  if (!/^\d+$/.test(at ?? '') || !/^\d+$/.test(id ?? '')) throw new TypeError(`not a feed cursor: ${JSON.stringify(after)}`);
  return { at: new Date(Number(at)), id: BigInt(id!) };
}

export function feedPage<T>(rows: T[], first: number, positionOf: (row: T) => [Date, bigint | string]) {
  const edges = rows.slice(0, first).map((node) => {
    const [at, id] = positionOf(node);
    return { cursor: Buffer.from(`${at.getTime()}:${id}`).toString('base64url'), node };
  });
  return { edges, pageInfo: { hasNextPage: rows.length > first, endCursor: edges.at(-1)?.cursor ?? null } };
}

export async function withPg<T>(databaseUrl: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
