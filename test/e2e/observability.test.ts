import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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

describe('shutdown', () => {
  it('turns /readyz false while draining and keeps serving until the listener closes', async () => {
    const other = await startTestApp({ SHUTDOWN_DELAY_MS: '1500' }, { sharing: t });
    expect((await fetch(`${other.url}/readyz`)).status).toBe(200);
    const stopping = other.app.stop();
    await new Promise((r) => setTimeout(r, 200));
    const ready = await fetch(`${other.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ status: 'draining' });
    expect((await other.gql('{ viewer { id } }')).data).toEqual({ viewer: null }); // still serving
    await stopping;
  });
});
