import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { startTcpProxy } from '../support/tcpProxy.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

describe('HTTP endpoints', () => {
  it('answers /healthz and /readyz when PostgreSQL and Redis are up', async () => {
    expect((await fetch(`${t.url}/healthz`)).status).toBe(200);
    const ready = await fetch(`${t.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });
  });

  it('exposes Prometheus metrics, with the event log lag of each consumer group and partition', async () => {
    const res = await fetch(`${t.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/tally_event_log_lag\{group="counter-agg",partition="0",state="pending"\} \d+/);
    expect(text).toMatch(/tally_event_log_lag\{group="counter-facts",partition="15",state="undelivered"\} \d+/);
    expect(text).toContain('tally_process_cpu_seconds_total');
  });

  it('refuses a chunked body (no content-length) once it grows past 1 MiB', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(`${t.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' } }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', (error) =>
        (error as NodeJS.ErrnoException).code === 'EPIPE' || (error as NodeJS.ErrnoException).code === 'ECONNRESET'
          ? undefined
          : reject(error),
      );
      req.write(`{"query":"{ viewer { id } }","pad":"`);
      const piece = 'x'.repeat(64 * 1024);
      const send = (left: number): void => {
        if (left === 0 || req.destroyed) return void req.end('"}');
        req.write(piece, () => send(left - 1));
      };
      send(24); // 1.5 MiB in 64 KiB chunks
    });
    expect(status).toBe(413);
    expect((await t.gql('{ viewer { id } }')).data).toEqual({ viewer: null });
  });

  it('answers 404 for unknown paths', async () => {
    expect((await fetch(`${t.url}/nope`)).status).toBe(404);
  });

  it('refuses a body over 1 MiB with 413 and stays healthy', async () => {
    const query = `{ viewer { id } }${' '.repeat(1024 * 1024)}`;
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query }),
    });
    expect(res.status).toBe(413);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect((await t.gql('{ viewer { id } }')).data).toEqual({ viewer: null });
  });

  it('refuses invalid JSON with 400 BAD_USER_INPUT', async () => {
    const res = await fetch(`${t.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"query": ',
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as any).errors[0].extensions.code).toBe('BAD_USER_INPUT');
  });

  it('reports syntax and validation errors as BAD_USER_INPUT', async () => {
    expect(errorCodes(await t.gql('{ feed { '))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql('{ noSuchField }'))).toEqual(['BAD_USER_INPUT']);
    expect(errorCodes(await t.gql('query($id: ID!) { post(id: $id) { id } }', {}))).toEqual(['BAD_USER_INPUT']);
  });
});

describe('a dependency is down', () => {
  it('turns /readyz to 503 when Redis goes away while /healthz stays 200', async () => {
    const redisUrl = new URL(TEST_REDIS_URL);
    const proxy = await startTcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
    const app = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, ROLE: 'api' });
    try {
      expect((await fetch(`${app.url}/readyz`)).status).toBe(200);
      await proxy.cut();
      expect((await fetch(`${app.url}/healthz`)).status).toBe(200);
      const ready = await fetch(`${app.url}/readyz`);
      expect(ready.status).toBe(503);
      // Why goes to the log: the error text names hosts and drivers.
      expect(await ready.json()).toEqual({ status: 'not ready' });
    } finally {
      await app.stop();
    }
  });

  it.each(['jit', 'graphql-js'])(
    'answers a feed page whose posts were handed their state with the errors of a page read field by field (Redis away, production, %s)',
    async (executor) => {
      const redisUrl = new URL(TEST_REDIS_URL);
      const proxy = await startTcpProxy({ host: redisUrl.hostname, port: Number(redisUrl.port || 6379) });
      const app = await startTestApp({
        REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
        ROLE: 'api',
        NODE_ENV: 'production',
        GRAPHQL_EXECUTOR: executor,
      });
      try {
        const token = await app.token(1);
        for (const title of ['a', 'b']) {
          expect(
            (await app.gql(`mutation { createPost(input: { title: "${title}", body: "." }) { id } }`, {}, { token })).errors,
          ).toBeUndefined();
        }
        const page = (more: string) => `{ feed(first: 2) { edges { node { id counts { likes } myState { liked }${more} } } } }`;
        expect((await app.gql(page(''), {}, { token })).errors).toBeUndefined();
        await proxy.cut();
        const handed = await app.gql(page(''), {}, { token });
        const byField = await app.gql(page(' author { counts { posts } }'), {}, { token });
        const postErrors = (res: any) =>
          (res.errors ?? [])
            .filter((e: any) => !e.path.includes('author'))
            .map((e: any) => ({ path: e.path.join('.'), message: e.message, extensions: e.extensions }))
            .sort((a: any, b: any) => a.path.localeCompare(b.path));
        expect(postErrors(handed).length).toBeGreaterThan(0);
        expect(postErrors(handed)).toEqual(postErrors(byField));
        expect(handed.data).toEqual(byField.data);
      } finally {
        await app.stop();
      }
    },
  );

  it('hides internal errors and stack traces in production', async () => {
    const prod = await startTestApp({ NODE_ENV: 'production' });
    try {
      await prod.db.drop(); // every SQL query now fails inside a resolver
      const res = await prod.gql('{ feed { edges { node { id } } } }');
      expect(res.errors).toEqual([
        expect.objectContaining({ message: 'internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } }),
      ]);
      expect(JSON.stringify(res)).not.toMatch(/stacktrace|tally_t_|postgres/i);
    } finally {
      await prod.stop();
    }
  });
});
