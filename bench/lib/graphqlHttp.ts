// A minimal node:http front for the baselines' Apollo servers: the same integration API
// (executeHTTPGraphQLRequest) Tally's src/http/server.ts uses, so HTTP handling costs the
// same on both sides and the comparison measures the resolvers, not a web framework.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type ApolloServer, HeaderMap } from '@apollo/server';

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  return text === '' ? undefined : JSON.parse(text);
}

export interface HttpGraphQLServer {
  url: string;
  stop(): Promise<void>;
}

export async function serveGraphQL<C extends object>(
  apollo: ApolloServer<C>,
  context: (authorization: string | undefined) => Promise<C>,
  host = process.env.HOST || '127.0.0.1',
  port = Number(process.env.PORT ?? 0),
): Promise<HttpGraphQLServer> {
  await apollo.start();
  const http = createServer((req, res) => {
    const handle = async () => {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const headers = new HeaderMap();
      for (const [key, value] of Object.entries(req.headers)) {
        if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
      }
      const response = await apollo.executeHTTPGraphQLRequest({
        httpGraphQLRequest: { method: req.method ?? 'GET', headers, search: url.search, body: await readJson(req) },
        context: () => context(req.headers.authorization),
      });
      for (const [key, value] of response.headers) res.setHeader(key, value);
      res.statusCode = response.status ?? 200;
      if (response.body.kind === 'complete') return void res.end(response.body.string);
      for await (const chunk of response.body.asyncIterator) res.write(chunk);
      res.end();
    };
    handle().catch((error: unknown) => {
      res.statusCode = 500;
      res.end(JSON.stringify({ errors: [{ message: String(error) }] }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve());
  });
  const { port: bound } = http.address() as AddressInfo;
  return {
    url: `http://${host}:${bound}`,
    async stop() {
      await new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeIdleConnections();
      });
      await apollo.stop();
    },
  };
}
