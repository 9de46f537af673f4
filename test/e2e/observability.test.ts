import { OperationTypeNode } from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchema } from '../../src/graphql/schema.js';
import { startTestApp, type TestApp } from '../support/app.js';
import { waitFor } from '../support/wait.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp({ SHUTDOWN_DELAY_MS: '1500' });
});
afterAll(() => t.stop());

const metric = (text: string, pattern: RegExp) => Number(pattern.exec(text)?.[1] ?? NaN);
const scrape = async () => (await fetch(`${t.url}/metrics`)).text();

describe('request ids', () => {
  it('returns one with every GraphQL response, keeping a well-formed client id', async () => {
    const mine = await t.gql('{ viewer { id } }', {}, { headers: { 'x-request-id': 'mobile-42.abc' } });
    expect(mine.headers.get('x-request-id')).toBe('mobile-42.abc');
    const generated = await t.gql('{ viewer { id } }', {}, { headers: { 'x-request-id': 'bad id with spaces <script>' } });
    expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});

describe('metrics', () => {
  it('count requests by operation and outcome, with latency and the Redis round trips they started', async () => {
    await t.createPosts(2);
    const roundTripsBefore = metric(await scrape(), /tally_redis_round_trips_total (\d+)/);
    await t.gql('{ feed { edges { node { id counts { likes } } } } }');
    await t.gql('{ feed(first: 0) { edges { cursor } } }');
    await t.gql('{ viewer { id } }', {}, { headers: { authorization: 'Bearer nope' } });
    const text = await scrape();
    expect(metric(text, /tally_graphql_requests_total\{operation="query feed",outcome="ok"\} (\d+)/)).toBeGreaterThanOrEqual(1);
    expect(metric(text, /tally_graphql_requests_total\{operation="query feed",outcome="BAD_USER_INPUT"\} (\d+)/)).toBe(1);
    expect(metric(text, /tally_graphql_requests_total\{operation="unknown",outcome="UNAUTHENTICATED"\} (\d+)/)).toBe(1);
    expect(metric(text, /tally_graphql_request_duration_seconds_count\{operation="query feed"\} (\d+)/)).toBeGreaterThanOrEqual(2);
    // The feed with counts took Redis round trips (one, but background work may add its own).
    expect(metric(text, /tally_redis_round_trips_total (\d+)/)).toBeGreaterThan(roundTripsBefore);
  });

  it('report flush duration and batch size, and the event log lag', async () => {
    const text = await waitFor(scrape, (s) => metric(s, /tally_flush_duration_seconds_count (\d+)/) > 0, { what: 'a flush' });
    expect(text).toMatch(/tally_flush_entities_bucket/);
    expect(text).toMatch(/tally_event_log_lag\{group="counter-agg"/);
  });
});

describe('metric series', () => {
  const ROOT = {
    post: 'post(id: "1") { id }',
    posts: 'posts(ids: ["1"]) { id }',
    feed: 'feed(first: 1) { edges { cursor } }',
    user: 'user(id: "1") { id }',
    viewer: 'viewer { id }',
  };
  const labels = (text: string, metricName: string, label: string) =>
    new Set([...text.matchAll(new RegExp(`^${metricName}\\{[^}]*${label}="([^"]*)"`, 'gm'))].map((m) => m[1]));

  it('stay bounded by the schema, whatever anonymous clients send', async () => {
    // Every combination of root fields, each under an operation name of its own.
    const names = Object.keys(ROOT) as (keyof typeof ROOT)[];
    for (let mask = 1; mask < 2 ** names.length; mask++) {
      const fields = names.filter((_, i) => mask & (1 << i)).map((n) => ROOT[n]);
      const res = await t.gql(`query Op${mask}x${Math.random().toString(36).slice(2)} { ${fields.join(' ')} }`);
      expect(res.errors).toBeUndefined();
    }
    // Sockets closed with codes of the client's choosing.
    for (const code of [4001, 4321, 4999, 3000]) {
      const socket = new WebSocket(`${t.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
      await new Promise((resolve) => socket.addEventListener('open', resolve));
      const closed = new Promise((resolve) => socket.addEventListener('close', resolve));
      socket.close(code);
      await closed;
    }
    const text = await waitFor(scrape, (s) => labels(s, 'tally_live_sockets_closed_total', 'code').size > 0, { what: 'the closes' });
    // Each root field, alone or first of several (+), and `other`: at most 2 labels a field.
    const schema = createSchema();
    const allowed = new Set(['unknown', 'invalid']);
    for (const type of [OperationTypeNode.QUERY, OperationTypeNode.MUTATION, OperationTypeNode.SUBSCRIPTION]) {
      allowed.add(`${type} other`);
      for (const field of Object.keys(schema.getRootType(type)!.getFields())) allowed.add(`${type} ${field}`).add(`${type} ${field}+`);
    }
    const operations = labels(text, 'tally_graphql_requests_total', 'operation');
    expect([...operations].filter((l) => !allowed.has(l!))).toEqual([]);
    expect(operations.has('query post+')).toBe(true); // post comes first in the schema
    expect(operations.has('query viewer')).toBe(true);
    expect([...labels(text, 'tally_live_sockets_closed_total', 'code')]).toEqual(['other']);
  });
});

describe('the metrics endpoint on a listener of its own', () => {
  it('serves METRICS_PATH on METRICS_PORT only', async () => {
    const other = await startTestApp({ METRICS_PORT: '0', METRICS_PATH: '/internal/metrics' }, { sharing: t });
    try {
      const metricsUrl = other.app.metricsUrl!;
      expect(new URL(metricsUrl).port).not.toBe(new URL(other.url).port);
      const scraped = await fetch(metricsUrl);
      expect(scraped.status).toBe(200);
      expect(await scraped.text()).toMatch(/tally_graphql_requests_total|tally_redis_round_trips_total/);
      for (const url of [`${other.url}/metrics`, `${other.url}/internal/metrics`, `${new URL(metricsUrl).origin}/graphql`]) {
        expect((await fetch(url)).status, url).toBe(404);
      }
      expect((await other.gql('{ viewer { id } }')).status).toBe(200);
    } finally {
      await other.stop();
    }
  });
});

describe('shutdown', () => {
  it('turns /readyz false while draining and keeps serving until the listener closes', async () => {
    const other = await startTestApp({ SHUTDOWN_DELAY_MS: '1500' }, { sharing: t });
    expect((await fetch(`${other.url}/readyz`)).status).toBe(200);
    const stopping = other.app.stop(); // draining from its first step, before it awaits anything
    const ready = await fetch(`${other.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'draining' });
    expect((await other.gql('{ viewer { id } }')).data).toEqual({ viewer: null }); // still serving
    await stopping;
  });
});
