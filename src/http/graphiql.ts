// GraphiQL, served by Tally itself and usable offline: one small HTML page plus the prebuilt
// browser bundles of installed npm packages. graphiql 4's UMD build runs on React 18's UMD
// builds (graphiql 5 and React 19 ship no browser-ready bundle); subscriptions run over
// graphql-ws's own UMD build. Nothing comes from a CDN.
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export const GRAPHIQL_ASSET_PREFIX = '/graphiql/';

const DEFAULT_QUERY = `# The feed: posts with their counts and your own state.
# Run it with Ctrl-Enter; the book icon (left) opens the docs.
# To act as a user (myState), get a token with
# \`npm run token -- 1\` and set the Headers tab below to
# {"Authorization": "Bearer <token from npm run token -- 1>"}
query Feed {
  feed(first: 10) {
    edges {
      cursor
      node {
        id
        title
        createdAt
        author { id name }
        counts { likes favs asOf }
        reactionGroups { content emoji count viewerHasReacted }
        myState { liked faved reactions bookmarked }
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}
`;

// GraphiQL needs valid JSON here; an empty Authorization header is anonymous, a bad one is 401.
const DEFAULT_HEADERS = '{\n  "Authorization": ""\n}';

interface Asset {
  file: string;
  type: string;
}

/** Whether an Accept header prefers HTML to JSON: browsers navigating do, GraphQL clients do not. */
export function prefersHtml(accept: string | undefined): boolean {
  const relevant = ['text/html', 'application/json', 'application/graphql-response+json', 'application/*', '*/*'];
  let best = { q: 0, html: false }; // on equal q the first listed wins
  for (const part of (accept ?? '').split(',')) {
    const [type = '', ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!relevant.includes(type)) continue;
    const q = Number(params.find((p) => p.startsWith('q='))?.slice(2) ?? 1);
    if (q > best.q) best = { q, html: type === 'text/html' };
  }
  return best.html;
}

/** A Host header that is a plain host name or IP literal with an optional port, and nothing else. */
const PLAIN_HOST = /^(?:[a-z0-9-]+(?:\.[a-z0-9-]+)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

// Built on first use, so a process with GraphiQL off never touches these packages.
let built: { page: string; csp: (host: string | undefined) => string; assets: Map<string, Asset> } | undefined;

function build() {
  if (built) return built;
  const require = createRequire(import.meta.url);
  const pkg = (name: string) => {
    const manifest = require.resolve(`${name}/package.json`);
    return { dir: dirname(manifest), version: (require(manifest) as { version: string }).version };
  };
  const graphiql = pkg('graphiql');
  const react = pkg('react');
  const reactDom = pkg('react-dom');
  const graphqlWs = pkg('graphql-ws');
  const js = 'text/javascript; charset=utf-8';
  // The only files served. Names carry the package version, so they can be cached forever.
  const assets = new Map<string, Asset>([
    [`react-${react.version}.js`, { file: join(react.dir, 'umd/react.production.min.js'), type: js }],
    [`react-dom-${reactDom.version}.js`, { file: join(reactDom.dir, 'umd/react-dom.production.min.js'), type: js }],
    [`graphiql-${graphiql.version}.js`, { file: join(graphiql.dir, 'graphiql.min.js'), type: js }],
    [`graphql-ws-${graphqlWs.version}.js`, { file: join(graphqlWs.dir, 'umd/graphql-ws.min.js'), type: js }],
    [`graphiql-${graphiql.version}.css`, { file: join(graphiql.dir, 'graphiql.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
  const names = [...assets.keys()];
  // Relative URLs (to the page at …/graphql), so a path prefix added by a proxy still works.
  const scripts = names.filter((n) => n.endsWith('.js')).map((n) => `<script src="graphiql/${n}"></script>`);
  const stylesheet = names.find((n) => n.endsWith('.css'));
  const literal = (value: string) => JSON.stringify(value).replace(/</g, '\\u003c'); // no </script> inside
  // Queries and mutations go over HTTP, subscriptions over a WebSocket to the same URL (ws: or
  // wss: as the page). The socket carries the Headers tab's Authorization (any case of the name)
  // as connection_init's `authorization`; an empty one leaves it anonymous. One lazy client per
  // Authorization value: it opens a socket while a subscription runs, and a changed value gets a
  // new client. No retries: a refused token (4403) or a restart shows at once; run it again.
  // A failure reaches GraphiQL as a result with errors, not through the sink's error, which
  // GraphiQL 4's iterator rethrows into a promise nobody handles (an uncaught error each time).
  const init = `
const socketUrl = new URL('graphql', location.href);
socketUrl.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
const errorsOf = (error) =>
  Array.isArray(error)
    ? error
    : [{ message: error instanceof CloseEvent ? ('Socket closed with event ' + error.code + ' ' + error.reason).trim() : error instanceof Error ? error.message : 'the socket failed' }];
let socket = { authorization: null, client: null };
const socketFor = (headers) => {
  const name = Object.keys(headers || {}).find((key) => key.toLowerCase() === 'authorization');
  const authorization = name === undefined ? '' : String(headers[name]).trim();
  if (socket.authorization !== authorization) {
    const connectionParams = authorization ? { authorization } : {};
    socket = { authorization, client: graphqlWs.createClient({ url: socketUrl.href, connectionParams, retryAttempts: 0 }) };
  }
  const client = socket.client;
  return {
    subscribe: (payload, sink) =>
      client.subscribe(payload, {
        next: (value) => sink.next(value),
        complete: () => sink.complete(),
        error: (error) => {
          sink.next({ errors: errorsOf(error) });
          sink.complete();
        },
      }),
  };
};
const fetcher = (params, options) =>
  GraphiQL.createFetcher({ url: 'graphql', wsClient: socketFor(options && options.headers) })(params, options);
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    defaultQuery: ${literal(DEFAULT_QUERY)},
    defaultHeaders: ${literal(DEFAULT_HEADERS)},
    fetcher,
    isHeadersEditorEnabled: true,
    defaultEditorToolsVisibility: 'headers',
    shouldPersistHeaders: false,
  }),
);`;
  const page = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tally · GraphiQL</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="graphiql/${stylesheet}">
<style>html, body, #graphiql { height: 100%; margin: 0; }</style>
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
${scripts.join('\n')}
<script>${init}</script>
</body>
</html>
`;
  // The browser itself refuses any request that would leave this origin.
  const initHash = createHash('sha256').update(init).digest('base64');
  // connect-src: HTTP to this origin, and WebSockets to this host and port only. CSP 3 lets
  // 'self' match ws:/wss: on the page's own host and port (Chromium and Firefox do), but browsers
  // without that rule (older WebKit) would block the socket, so the host the browser asked for
  // is named with both schemes (behind a TLS proxy the server cannot tell which the page used;
  // a browser refuses ws: from an https: page anyway). Only a plain host[:port] is copied into
  // the header, so a crafted Host cannot add a source or a directive; otherwise 'self' alone.
  const csp = (host: string | undefined) =>
    [
      "default-src 'none'",
      `script-src 'self' 'sha256-${initHash}'`,
      "style-src 'self' 'unsafe-inline'",
      "img-src 'self' data:",
      "font-src 'self' data:",
      host && PLAIN_HOST.test(host) ? `connect-src 'self' ws://${host.toLowerCase()} wss://${host.toLowerCase()}` : "connect-src 'self'",
      "base-uri 'none'",
      "form-action 'none'",
      "frame-ancestors 'none'",
    ].join('; ');
  built = { page, csp, assets };
  return built;
}

export function sendGraphiQLPage(res: ServerResponse) {
  const { page, csp } = build();
  res.writeHead(200, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-cache',
    'content-security-policy': csp(res.req.headers.host),
    'x-content-type-options': 'nosniff',
  });
  res.end(page);
}

const contents = new Map<string, Promise<Buffer>>();

/** Serves one file of the allow-list by exact name; anything else is a 404. */
export async function serveGraphiQLAsset(req: IncomingMessage, res: ServerResponse, pathname: string) {
  const name = pathname.slice(GRAPHIQL_ASSET_PREFIX.length);
  const asset = build().assets.get(name);
  if (!asset || (req.method !== 'GET' && req.method !== 'HEAD')) {
    res.writeHead(404, { 'content-type': 'application/json; charset=utf-8' });
    return res.end(JSON.stringify({ error: 'not found' }));
  }
  let body = contents.get(name);
  if (!body) {
    body = readFile(asset.file);
    body.catch(() => contents.delete(name)); // retry a failed read next time
    contents.set(name, body);
  }
  const data = await body;
  res.writeHead(200, {
    'content-type': asset.type,
    'content-length': data.length,
    'cache-control': 'public, max-age=31536000, immutable',
    'x-content-type-options': 'nosniff',
  });
  res.end(req.method === 'HEAD' ? undefined : data);
}
