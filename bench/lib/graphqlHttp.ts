// The baselines' node:http front: Apollo's executeHTTPGraphQLRequest, as Tally's own HTTP server uses it.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ApolloServer, HeaderMap } from '@apollo/server';

export async function readJson(req: IncomingMessage): Promise<any> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

/** Serves `handle` on HOST:PORT of `env`; a handler that throws answers `statusOf(error)`. */
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

export async function serveGraphQL<C extends object>(
  env: NodeJS.ProcessEnv,
  apollo: ApolloServer<C>,
  context: (authorization: string | undefined) => Promise<C>,
) {
  await apollo.start();
  const http = await listenHttp(env, async (req, res) => {
    const headers = new HeaderMap();
    for (const [key, value] of Object.entries(req.headers)) {
      if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
    }
    const response = await apollo.executeHTTPGraphQLRequest({
      httpGraphQLRequest: {
        method: req.method ?? 'GET',
        headers,
        search: new URL(req.url ?? '/', 'http://localhost').search,
        body: await readJson(req),
      },
      context: () => context(req.headers.authorization),
    });
    for (const [key, value] of response.headers) res.setHeader(key, value);
    res.statusCode = response.status ?? 200;
    if (response.body.kind === 'complete') return void res.end(response.body.string);
    for await (const chunk of response.body.asyncIterator) res.write(chunk);
    res.end();
  });
  return { url: http.url, stop: () => http.stop().then(() => apollo.stop()) };
}
