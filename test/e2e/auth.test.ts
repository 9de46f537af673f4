import { SignJWT } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorCodes, startTestApp, TEST_JWT_SECRET, type TestApp } from '../support/app.js';
import { connectLive } from '../support/liveClient.js';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.stop());

const VIEWER = '{ viewer { id name } }';

async function userRow(id: number) {
  const client = new pg.Client({ connectionString: t.db.url });
  await client.connect();
  try {
    return (await client.query('SELECT id, name FROM users WHERE id = $1', [id])).rows[0] ?? null;
  } finally {
    await client.end();
  }
}

describe('authentication over HTTP', () => {
  it('answers anonymously without a token', async () => {
    const res = await t.gql(VIEWER);
    expect(res.status).toBe(200);
    expect(res.data).toEqual({ viewer: null });
  });

  it('creates the user on the first authenticated request and follows name changes', async () => {
    expect(await userRow(501)).toBeNull();
    const res = await t.gql(VIEWER, {}, { token: await t.token(501, { name: 'Grace' }) });
    expect(res.data).toEqual({ viewer: { id: '501', name: 'Grace' } });
    expect(await userRow(501)).toEqual({ id: '501', name: 'Grace' });

    await t.gql(VIEWER, {}, { token: await t.token(501, { name: 'Grace H.' }) });
    expect(await userRow(501)).toEqual({ id: '501', name: 'Grace H.' });
    // A token without a name keeps the stored one.
    const again = await t.gql(VIEWER, {}, { token: await t.token(501) });
    expect(again.data).toEqual({ viewer: { id: '501', name: 'Grace H.' } });
    // Back to the first name: written again although it was seen before.
    await t.gql(VIEWER, {}, { token: await t.token(501, { name: 'Grace' }) });
    expect(await userRow(501)).toEqual({ id: '501', name: 'Grace' });
  });

  it('refuses bad, expired and malformed tokens with 401 UNAUTHENTICATED, never anonymously', async () => {
    const key = new TextEncoder().encode(TEST_JWT_SECRET);
    const expired = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('9').setExpirationTime('-1m').sign(key);
    const badSub = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('abc').sign(key);
    const foreign = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('9')
      .sign(new TextEncoder().encode('z'.repeat(40)));
    const headers = [`Bearer ${expired}`, `Bearer ${badSub}`, `Bearer ${foreign}`, 'Bearer not.a.jwt', 'Token abc', 'Bearer'];
    for (const authorization of headers) {
      const res = await t.gql(VIEWER, {}, { headers: { authorization } });
      expect(res.status, authorization).toBe(401);
      expect(errorCodes(res), authorization).toEqual(['UNAUTHENTICATED']);
      expect(res.data ?? null).toBeNull();
    }
  });

  it('requires a token for mutations', async () => {
    const res = await t.gql('mutation { createPost(input: { title: "t", body: "b" }) { id } }');
    expect(errorCodes(res)).toEqual(['UNAUTHENTICATED']);
    expect(res.data).toEqual({ createPost: null }); // a failed mutation field is null
  });
});

describe('token rules as settings, over HTTP and WebSocket', () => {
  let strict: TestApp;
  const key = new TextEncoder().encode(TEST_JWT_SECRET);
  beforeAll(async () => {
    strict = await startTestApp({ NODE_ENV: 'production', JWT_ISSUER: 'https://id.example', JWT_AUDIENCE: 'tally' });
  });
  afterAll(() => strict.stop());

  const token = (iss: string, exp: boolean) => {
    const jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('77').setIssuer(iss).setAudience('tally');
    if (exp) jwt.setExpirationTime('1h');
    return jwt.sign(key);
  };

  it('takes a token with the issuer, audience and expiry the settings ask for, and only that', async () => {
    const good = await strict.gql(VIEWER, {}, { token: await token('https://id.example', true) });
    expect(good.data).toEqual({ viewer: { id: '77', name: null } });
    for (const [what, bad] of [
      ['another issuer', await token('https://other.example', true)],
      ['no exp (JWT_REQUIRE_EXP defaults to true)', await token('https://id.example', false)],
      ['the default rules', await t.token(77)],
    ] as const) {
      const res = await strict.gql(VIEWER, {}, { token: bad });
      expect([res.status, errorCodes(res)], what).toEqual([401, ['UNAUTHENTICATED']]);
      const socket = connectLive(strict.url, { token: bad });
      expect((await socket.closed).code, what).toBe(4403);
    }
    const live = connectLive(strict.url, { token: await token('https://id.example', true) });
    await new Promise((resolve) => live.client.on('connected', resolve));
    await live.dispose();
  });
});
