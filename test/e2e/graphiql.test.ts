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

describe('GraphiQL in a browser', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ NODE_ENV: 'development' });
  });
  afterAll(() => t?.stop());

  it('shows the docs and the example feed query, and runs it with a bearer token, all from Tally', async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`Chromium is required for this test and is missing at ${CHROMIUM}: apt-get install -y chromium`);
    }
    await t.createPosts(2);
    const token = await t.token(1);
    const userDataDir = await mkdtemp(join(tmpdir(), 'tally-chromium-'));
    const browser = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      headless: true,
      viewport: { width: 1400, height: 900 },
    });
    try {
      const requests: string[] = [];
      const problems: string[] = [];
      browser.on('request', (r) => requests.push(r.url()));
      const page = await browser.newPage();
      page.on('pageerror', (error) => problems.push(error.message));
      page.on('console', (message) => {
        if (message.type() === 'error') problems.push(message.text()); // CSP violations land here
      });

      await page.goto(`${t.url}/graphql`);
      await page.waitForSelector('.graphiql-query-editor .CodeMirror');
      const query = await editorValue(page, '.graphiql-query-editor');
      expect(query).toMatch(/query Feed \{\s+feed\(first: 10\)/);
      for (const field of ['counts', 'myState', 'author', 'pageInfo']) expect(query).toContain(field);

      // The headers editor is open; replace its content as a user pasting would.
      const headersEditor = '.graphiql-editor-tool[aria-label="Headers"] .graphiql-editor:not(.hidden)';
      expect(await editorValue(page, headersEditor)).toContain('"Authorization"');
      const headers = JSON.stringify({ Authorization: `Bearer ${token}` });
      await page.click(`${headersEditor} .CodeMirror`);
      await page.keyboard.press('Control+A');
      await page.keyboard.insertText(headers);
      expect(await editorValue(page, headersEditor)).toBe(headers);

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
      await browser.close();
      await rm(userDataDir, { recursive: true, force: true });
    }
  }, 45_000);
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
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
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
    expect(assets).toHaveLength(4);
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
