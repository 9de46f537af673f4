// GraphiQL as a browser sees it: Debian's Chromium, driven by playwright-core, against a real
// Tally. Chromium is required (CI installs it): a missing browser fails, it does not skip.
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { openSubscriptions } from '../support/liveClient.js';
import { waitFor } from '../support/wait.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));
const BROWSER_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';

/** The text of the CodeMirror editor inside `selector`. */
const editorValue = (page: Page, selector: string) =>
  page.$eval(`${selector} .CodeMirror`, (el) => (el as unknown as { CodeMirror: { getValue(): string } }).CodeMirror.getValue());

const getHtml = (url: string) => fetch(url, { headers: { accept: BROWSER_HTML } });

/** Replaces the text of the CodeMirror editor inside `selector` as a user pasting would. */
async function paste(page: Page, selector: string, text: string) {
  await page.click(`${selector} .CodeMirror`);
  await page.keyboard.press('Control+A');
  await page.keyboard.insertText(text);
  expect(await editorValue(page, selector)).toBe(text);
  await page.keyboard.press('Control+Home'); // scrolled back to the start, for the screenshots
}

const HEADERS_EDITOR = '.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden)';

/** Chromium on a fresh profile, recording every request, page error and console error. */
async function launchChromium() {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`Chromium is required for this test and is missing at ${CHROMIUM}: apt-get install -y chromium`);
  }
  const userDataDir = await mkdtemp(join(tmpdir(), 'tally-chromium-'));
  const browser = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    viewport: { width: 1400, height: 900 },
  });
  const requests: string[] = [];
  const problems: string[] = [];
  browser.on('request', (r) => requests.push(r.url()));
  const page = await browser.newPage();
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text()); // CSP violations land here
  });
  const close = async () => {
    await browser.close();
    await rm(userDataDir, { recursive: true, force: true });
  };
  return { page, requests, problems, close };
}

describe('GraphiQL in a browser', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ NODE_ENV: 'development' });
  });
  afterAll(() => t?.stop());

  it('shows the docs and the example feed query, and runs it with a bearer token, all from Tally', async () => {
    await t.createPosts(2);
    const token = await t.token(1);
    const { page, requests, problems, close } = await launchChromium();
    try {
      await page.goto(`${t.url}/graphql`);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror');
      const query = await editorValue(page, '.graphiql-query-editor');
      expect(query).toMatch(/query Feed \{\s+feed\(first: 10\)/);
      for (const field of ['counts', 'myState', 'author', 'pageInfo']) expect(query).toContain(field);

      // The headers editor is open; replace its content as a user pasting would.
      expect(await editorValue(page, HEADERS_EDITOR)).toContain('"Authorization"');
      await paste(page, HEADERS_EDITOR, JSON.stringify({ Authorization: `Bearer ${token}` }));

      await page.click('.graphiql-execute-button');
      // A locator, not a string predicate: the page's CSP forbids the eval that would need.
      await page.locator('.result-window .CodeMirror').getByText('"edges"').waitFor();
      const result = JSON.parse(await editorValue(page, '.result-window'));
      expect(result.errors).toBeUndefined();
      expect(result.data.feed.edges).toHaveLength(2);
      expect(result.data.feed.edges[0].node).toMatchObject({
        author: { id: '1' },
        myState: { liked: false, faved: false }, // non-null: the token was sent
      });

      await page.click('button[aria-label="Show Documentation Explorer"]');
      const docs = page.locator('.graphiql-doc-explorer');
      await docs.getByText('Query', { exact: true }).click();
      await docs.getByText('feed', { exact: true }).waitFor();

      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'graphiql.png') });

      expect(problems).toEqual([]);
      expect(requests).toContain(`${t.url}/graphql`);
      expect(requests.some((url) => url.includes('/graphiql/graphiql-'))).toBe(true);
      const elsewhere = requests.filter((url) => !/^(data|blob):/.test(url) && new URL(url).origin !== t.url);
      expect(elsewhere).toEqual([]);
    } finally {
      await close();
    }
  }, 45_000);

  it('runs a subscription over a WebSocket to the same URL, authenticated by the Headers tab, and keeps streaming', async () => {
    const [postId] = await t.createPosts(1);
    const token = await t.token(1);
    const like = async (userId: number) => {
      const res = await t.gql(
        'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
        { id: postId },
        { token: await t.token(userId) },
      );
      expect(res.errors).toBeUndefined();
    };
    const subscriptions = (open: number) =>
      waitFor(
        () => openSubscriptions(t.url),
        (n) => n === open,
        { what: `${open} open subscriptions on the server` },
      );
    const { page, requests, problems, close } = await launchChromium();
    try {
      // What the page's sockets send: their URL and every frame (connection_init carries the token).
      const sockets: { url: string; sent: Record<string, unknown>[] }[] = [];
      page.on('websocket', (ws) => {
        const socket = { url: ws.url(), sent: [] as Record<string, unknown>[] };
        sockets.push(socket);
        ws.on('framesent', (frame) => socket.sent.push(JSON.parse(String(frame.payload))));
      });
      const result = page.locator('.result-window .CodeMirror');
      const resultJson = async () => JSON.parse(await editorValue(page, '.result-window'));
      const run = async () => {
        await page.click('.graphiql-execute-button');
        await subscriptions(1); // counted once its SSUBSCRIBE is sent: a like from here on is pushed
      };
      const stop = async () => {
        await page.click('.graphiql-execute-button'); // while a subscription runs, the button stops it
        await subscriptions(0);
      };

      await page.goto(`${t.url}/graphql`);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror');
      await paste(page, '.graphiql-query-editor', `subscription { postCountsChanged(postIds: ["${postId}"]) { id counts { likes } } }`);
      await paste(page, HEADERS_EDITOR, JSON.stringify({ Authorization: `Bearer ${token}` }));
      await run();

      await like(2);
      await result.getByText('"likes": 1').waitFor();
      expect(await resultJson()).toEqual({ data: { postCountsChanged: { id: postId, counts: { likes: 1 } } } });
      await mkdir(ARTIFACTS, { recursive: true });
      await page.screenshot({ path: join(ARTIFACTS, 'graphiql-subscription.png') });
      await like(3);
      await result.getByText('"likes": 2').waitFor();
      expect(await resultJson()).toEqual({ data: { postCountsChanged: { id: postId, counts: { likes: 2 } } } });

      // One socket, to this origin's /graphql, whose connection_init carried the Headers tab's token.
      expect(sockets.map((s) => s.url)).toEqual([`${t.url.replace(/^http/, 'ws')}/graphql`]);
      expect(sockets[0]!.sent[0]).toEqual({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } });
      expect(sockets[0]!.sent[1]).toMatchObject({ type: 'subscribe', payload: { query: expect.stringContaining('postCountsChanged') } });

      // The page's default empty Authorization: a new socket, anonymous, still streaming.
      await stop();
      await paste(page, HEADERS_EDITOR, '{"Authorization": ""}');
      await run();
      await like(4);
      await result.getByText('"likes": 3').waitFor();
      expect(sockets).toHaveLength(2);
      expect(sockets[1]!.sent[0]).toEqual({ type: 'connection_init', payload: {} });

      // A bad token is checked, not ignored: the server closes the socket with 4403.
      await stop();
      await paste(page, HEADERS_EDITOR, '{"Authorization": "Bearer not-a-token"}');
      await page.click('.graphiql-execute-button');
      await result.getByText('4403').waitFor();
      expect(await resultJson()).toEqual({ errors: [{ message: 'Socket closed with event 4403 Forbidden' }] });
      expect(sockets[2]!.sent[0]).toEqual({ type: 'connection_init', payload: { authorization: 'Bearer not-a-token' } });

      expect(problems).toEqual([]);
      expect(requests.some((url) => url.includes('/graphiql/graphql-ws-'))).toBe(true);
      const elsewhere = [...requests, ...sockets.map((s) => s.url)].filter(
        (url) => !/^(data|blob):/.test(url) && new URL(url).host !== new URL(t.url).host,
      );
      expect(elsewhere).toEqual([]);
    } finally {
      await close();
    }
  }, 60_000);
});

describe('GraphiQL over plain HTTP', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ NODE_ENV: 'development' });
  });
  afterAll(() => t?.stop());

  it('serves the page to browsers only, with no URL of another host', async () => {
    const page = await getHtml(`${t.url}/graphql`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy');
    expect(csp).toContain("default-src 'none'");
    // Sockets only to the host the browser asked for; a Host that is not a plain host[:port] adds nothing.
    const { host } = new URL(t.url);
    expect(csp).toContain(`; connect-src 'self' ws://${host} wss://${host};`);
    expect(await rawCsp(t.url, "x; connect-src *; script-src 'unsafe-eval'")).toContain("; connect-src 'self'; ");
    const html = await page.text();
    expect(html).toContain('<div id="graphiql">');
    expect(html).not.toMatch(/(https?:)?\/\/[a-z]/i);
    // A GraphQL client asking for JSON still reaches Apollo.
    const json = await fetch(`${t.url}/graphql?query=${encodeURIComponent('{ viewer { id } }')}`, {
      headers: { accept: 'application/json', 'apollo-require-preflight': 'true' }, // Apollo's CSRF guard on GET
    });
    expect(await json.json()).toEqual({ data: { viewer: null } });
  });

  it('serves only its allow-listed assets, cacheable for a year', async () => {
    const html = await (await getHtml(`${t.url}/graphql`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(graphiql\/[^"]+)"/g)].map((m) => m[1]!);
    expect(assets).toHaveLength(5);
    for (const asset of assets) {
      const res = await fetch(`${t.url}/${asset}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(1000);
    }
    // Raw paths (fetch would normalise `..` away before sending).
    for (const path of [
      '/graphiql/../package.json',
      '/graphiql/..%2Fpackage.json',
      '/graphiql/',
      '/graphiql/graphiql.min.js',
      '/graphiql/__proto__',
    ]) {
      expect(await rawStatus(t.url, path), path).toBe(404);
    }
  });

  it("treats the page's default empty Authorization header as anonymous", async () => {
    expect((await t.gql('{ viewer { id } }', {}, { headers: { authorization: '' } })).data).toEqual({ viewer: null });
  });
});

describe('GraphiQL in production', () => {
  it("is off by default: a browser gets Apollo's answer to a GET without a query, and no assets", async () => {
    const prod = await startTestApp({ NODE_ENV: 'production', ROLE: 'api' });
    try {
      const res = await getHtml(`${prod.url}/graphql`);
      expect(res.status).toBe(400);
      expect(res.headers.get('content-type')).not.toMatch(/html/);
      expect(await res.text()).not.toContain('graphiql');
      expect((await fetch(`${prod.url}/graphiql/graphiql-${graphiqlVersion()}.js`)).status).toBe(404);
    } finally {
      await prod.stop();
    }
  });

  it('is on with GRAPHIQL=true', async () => {
    const prod = await startTestApp({ NODE_ENV: 'production', ROLE: 'api', GRAPHIQL: 'true' });
    try {
      const res = await getHtml(`${prod.url}/graphql`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('<div id="graphiql">');
    } finally {
      await prod.stop();
    }
  });
});

const graphiqlVersion = () => (createRequire(import.meta.url)('graphiql/package.json') as { version: string }).version;

/** The Content-Security-Policy of the GraphiQL page asked for with this Host header. */
function rawCsp(base: string, host: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    request({ host: hostname, port, path: '/graphql', headers: { host, accept: BROWSER_HTML } }, (res) => {
      res.resume();
      resolve(String(res.headers['content-security-policy']));
    })
      .on('error', reject)
      .end();
  });
}

/** The status of a GET sent with `path` exactly as written. */
function rawStatus(base: string, path: string): Promise<number> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    request({ host: hostname, port, path }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}
