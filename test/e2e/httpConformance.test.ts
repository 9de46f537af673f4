// GraphQL over HTTP conformance: graphql-http's audit suite (the per-audit form of `auditServer`)
// against a real Tally, in production and development, with each executor. Every audit is one
// test. An audit may fail only if it is on EXCEPTIONS below, with its reason, and then it must
// fail the known way (HTTP 400, BAD_USER_INPUT); an exception that starts passing fails too,
// so the list cannot go stale.
import { type Audit, serverAudits } from 'graphql-http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';

type Env = 'production' | 'development';
type Level = 'MUST' | 'SHOULD' | 'MAY';

interface Exception {
  why: string;
  /** The requirement levels this reason may excuse (the issue tracker allows no more). */
  levels: Level[];
  /** What the refusal says, beyond HTTP 400 BAD_USER_INPUT. */
  message?: RegExp;
}

const INTROSPECTION: Exception = {
  why: 'introspection is off in production (src/graphql/apollo.ts); these audits read __type',
  levels: ['MUST', 'SHOULD'],
  message: /introspection is not allowed/,
};
const APOLLO_400: Exception = {
  why: 'Apollo answers 400 to documents that fail to parse or validate whatever the client accepts; the spec suggests 200 for application/json',
  levels: ['SHOULD'],
};
const CSRF: Exception = {
  why: "Apollo's CSRF prevention refuses a GET without a content-type or an apollo-require-preflight header; the audits send bare GETs",
  levels: ['MAY'],
  message: /Cross-Site Request Forgery/,
};

// Excepted in both environments.
const ALWAYS: Record<string, Exception> = {
  '572B': APOLLO_400, // `{` does not parse
  FDE2: APOLLO_400, // its unknown field `8f31…` starts with a digit: graphql-js fails to parse it, too
  '7B9B': APOLLO_400, // its `$id` is never used: a validation failure before any coercion
  // The GET audits reach Apollo, not GraphiQL (they do not prefer text/html): `message` checks it.
  '5A70': CSRF,
  D6D5: CSRF,
  '6A70': CSRF,
};
const EXCEPTIONS: Record<Env, Record<string, Exception>> = {
  development: ALWAYS,
  production: { ...ALWAYS, BF61: INTROSPECTION, '28B9': INTROSPECTION, '2EA1': INTROSPECTION },
};

const SERVERS = [
  { env: 'production', executor: 'jit' },
  { env: 'production', executor: 'graphql-js' },
  { env: 'development', executor: 'jit' },
  { env: 'development', executor: 'graphql-js' },
] as const;

const apps = new Map<string, TestApp>();
const keyOf = (s: (typeof SERVERS)[number]) => `${s.env}/${s.executor}`;

beforeAll(async () => {
  for (const server of SERVERS) {
    const owner = apps.values().next().value; // one database and Redis prefix for all four
    const app = await startTestApp(
      { NODE_ENV: server.env, GRAPHQL_EXECUTOR: server.executor, JIT_COMPILE_AFTER: '1' },
      owner ? { sharing: owner } : {},
    );
    apps.set(keyOf(server), app);
  }
});
afterAll(async () => {
  // The owner (started first) drops the shared database, so it stops last.
  for (const app of [...apps.values()].reverse()) await app.stop();
});

/** The response of a failed audit, in a line a report can show. */
async function described(response: Response) {
  return `HTTP ${response.status} ${response.headers.get('content-type')}: ${(await response.text()).slice(0, 500)}`;
}

const levelOf = (audit: Audit) => audit.name.split(' ')[0] as Level;

describe('the exception list', () => {
  it('names only audits of the suite, each excused at a level its reason allows', () => {
    const audits = new Map(serverAudits({ url: 'http://unused' }).map((a) => [a.id, a]));
    for (const exceptions of Object.values(EXCEPTIONS)) {
      for (const [id, exception] of Object.entries(exceptions)) {
        expect(audits.has(id), `${id} is not a graphql-http audit`).toBe(true);
        expect(exception.levels, `${id} ${audits.get(id)!.name}`).toContain(levelOf(audits.get(id)!));
      }
    }
  });
});

const cases = SERVERS.map((server) => [`NODE_ENV=${server.env}, GRAPHQL_EXECUTOR=${server.executor}`, server] as const);

describe.each(cases)('GraphQL over HTTP with %s', (_, server) => {
  // The URL is read when an audit runs, after beforeAll started the server.
  const audits = serverAudits({ url: () => `${apps.get(keyOf(server))!.url}/graphql` });

  it.each(audits.map((audit) => [`${audit.id} ${audit.name}`, audit] as const))('%s', async (__, audit) => {
    const result = await audit.fn();
    const exception = EXCEPTIONS[server.env][audit.id];
    if (!exception) {
      const failure = result.status === 'ok' ? '' : `${result.reason}; ${await described(result.response)}`;
      expect(failure, 'audit failed').toBe('');
      return;
    }
    // Excepted: it must still fail, and only the known way.
    expect(result.status, `excepted (${exception.why}) but passes: drop the exception`).not.toBe('ok');
    if (result.status === 'ok') return;
    const { response } = result;
    const text = await response.clone().text();
    expect(response.status, `excepted for a 400 (${exception.why}), got ${await described(response)}`).toBe(400);
    const body = JSON.parse(text) as { errors?: { message: string; extensions?: { code?: string } }[] };
    expect(body.errors?.map((e) => e.extensions?.code)).toEqual(['BAD_USER_INPUT']);
    if (exception.message) expect(body.errors![0]!.message).toMatch(exception.message);
  });
});
