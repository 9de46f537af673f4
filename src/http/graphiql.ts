// GraphiQL, served by Tally itself and usable offline: one small HTML page plus the prebuilt
// browser bundles of installed npm packages. graphiql 4's UMD build runs on React 18's UMD
// builds (graphiql 5 and React 19 ship no browser-ready bundle). Nothing comes from a CDN.
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
        myState { liked faved }
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

// Built on first use, so a process with GraphiQL off never touches these packages.
let built: { page: string; csp: string; assets: Map<string, Asset> } | undefined;

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
  const js = 'text/javascript; charset=utf-8';
  // The only files served. Names carry the package version, so they can be cached forever.
  const assets = new Map<string, Asset>([
    [`react-${react.version}.js`, { file: join(react.dir, 'umd/react.production.min.js'), type: js }],
    [`react-dom-${reactDom.version}.js`, { file: join(reactDom.dir, 'umd/react-dom.production.min.js'), type: js }],
    [`graphiql-${graphiql.version}.js`, { file: join(graphiql.dir, 'graphiql.min.js'), type: js }],
    [`graphiql-${graphiql.version}.css`, { file: join(graphiql.dir, 'graphiql.min.css'), type: 'text/css; charset=utf-8' }],
  ]);
  const names = [...assets.keys()];
  // Relative URLs (to the page at …/graphql), so a path prefix added by a proxy still works.
  const scripts = names.filter((n) => n.endsWith('.js')).map((n) => `<script src="graphiql/${n}"></script>`);
  const stylesheet = names.find((n) => n.endsWith('.css'));
  const literal = (value: string) => JSON.stringify(value).replace(/</g, '\\u003c'); // no </script> inside
  const init = `
ReactDOM.createRoot(document.getElementById('graphiql')).render(
  React.createElement(GraphiQL, {
    defaultQuery: ${literal(DEFAULT_QUERY)},
    defaultHeaders: ${literal(DEFAULT_HEADERS)},
    fetcher: GraphiQL.createFetcher({ url: 'graphql' }),
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
  const csp = [
    "default-src 'none'",
    `script-src 'self' 'sha256-${initHash}'`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data:",
    "font-src 'self' data:",
    "connect-src 'self'",
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
    'content-security-policy': csp,
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
