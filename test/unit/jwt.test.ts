import { SignJWT, UnsecuredJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';

const SECRET = 'unit-test-secret-0123456789abcdef0123';
const auth = createAuth(SECRET);
const key = new TextEncoder().encode(SECRET);

const sign = (claims: Record<string, unknown>, sub?: string, exp = '1h') => {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setIssuedAt().setExpirationTime(exp);
  if (sub !== undefined) jwt.setSubject(sub);
  return jwt.sign(key);
};

async function failure(header: string): Promise<{ code?: string; message: string }> {
  try {
    await auth.viewerFrom(header);
  } catch (error) {
    const e = error as { message: string; extensions?: { code?: string } };
    return { code: e.extensions?.code, message: e.message };
  }
  throw new Error('expected the header to be refused');
}

describe('auth.viewerFrom', () => {
  afterEach(() => vi.useRealTimers());

  it('is anonymous without a header', async () => {
    expect(await auth.viewerFrom(undefined)).toBeNull();
    expect(await auth.viewerFrom('')).toBeNull();
  });

  it('reads the user id from sub and the optional name claim', async () => {
    expect(await auth.viewerFrom(`Bearer ${await auth.sign(42, { name: '  Ada  ' })}`)).toMatchObject({ id: 42, name: 'Ada' });
    expect(await auth.viewerFrom(`Bearer ${await auth.sign(9007199254740991)}`)).toMatchObject({
      id: 9007199254740991,
      name: null,
    });
  });

  it('refuses an expired token with a message that says so', async () => {
    const token = await sign({}, '7', '-1h');
    expect(await failure(`Bearer ${token}`)).toEqual({ code: 'UNAUTHENTICATED', message: 'token expired' });
  });

  it('remembers a verified token only until it expires', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const token = await sign({}, '8', '60s');
    const viewer = await auth.viewerFrom(`Bearer ${token}`);
    expect(viewer).toMatchObject({ id: 8, name: null });
    // Valid until exp plus the 30 s tolerance: a socket authenticated with it closes then.
    expect(viewer!.validUntilMs - Date.now()).toBeGreaterThan(85_000);
    expect(viewer!.validUntilMs - Date.now()).toBeLessThanOrEqual(90_000);
    vi.setSystemTime(Date.now() + 60_000); // within the 30 s clock tolerance: still valid
    expect(await auth.viewerFrom(`Bearer ${token}`)).toMatchObject({ id: 8, name: null });
    vi.setSystemTime(Date.now() + 31_000);
    expect(await failure(`Bearer ${token}`)).toEqual({ code: 'UNAUTHENTICATED', message: 'token expired' });
  });

  it('refuses a token signed with another secret, an unsigned token and garbage', async () => {
    const other = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject('7')
      .sign(new TextEncoder().encode('x'.repeat(40)));
    const unsigned = new UnsecuredJWT({}).setSubject('7').encode();
    for (const token of [other, unsigned, 'not-a-jwt', 'a.b.c']) {
      expect((await failure(`Bearer ${token}`)).code).toBe('UNAUTHENTICATED');
    }
  });

  it('refuses headers that are not "Bearer <token>"', async () => {
    const token = await auth.sign(7);
    for (const header of [token, `Basic ${token}`, `Bearer`, `Bearer ${token} extra`]) {
      expect((await failure(header)).code).toBe('UNAUTHENTICATED');
    }
  });

  it.each(['0', '-3', '007', 'alice', '1.5', '9007199254740992'])('refuses sub %j', async (sub) => {
    expect((await failure(`Bearer ${await sign({}, sub)}`)).code).toBe('UNAUTHENTICATED');
  });

  it('refuses a token without sub', async () => {
    expect((await failure(`Bearer ${await sign({})}`)).code).toBe('UNAUTHENTICATED');
  });

  it('refuses a token without exp unless JWT_REQUIRE_EXP is off', async () => {
    const forever = await new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('7').sign(key);
    expect(await failure(`Bearer ${forever}`)).toEqual({ code: 'UNAUTHENTICATED', message: 'token has no "exp" claim' });
    const lenient = createAuth(SECRET, { requireExp: false, issuer: null, audience: null });
    expect(await lenient.viewerFrom(`Bearer ${forever}`)).toMatchObject({ id: 7, validUntilMs: Infinity });
  });
});

describe('issuer and audience (JWT_ISSUER, JWT_AUDIENCE)', () => {
  const rules = { requireExp: true, issuer: 'https://id.example', audience: 'tally' };
  const strict = createAuth(SECRET, rules);
  const claims = (iss: string | null, aud: string | string[] | null) => {
    const jwt = new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject('7').setExpirationTime('1h');
    if (iss !== null) jwt.setIssuer(iss);
    if (aud !== null) jwt.setAudience(aud);
    return jwt.sign(key);
  };
  const refusal = async (token: string) =>
    strict.viewerFrom(`Bearer ${token}`).then(
      () => null,
      (e: Error) => e.message,
    );

  it('accepts tokens naming both, the audience among others, and the ones it signs itself', async () => {
    expect(await strict.viewerFrom(`Bearer ${await claims(rules.issuer, rules.audience)}`)).toMatchObject({ id: 7 });
    expect(await strict.viewerFrom(`Bearer ${await claims(rules.issuer, ['other', 'tally'])}`)).toMatchObject({ id: 7 });
    expect(await strict.viewerFrom(`Bearer ${await strict.sign(8)}`)).toMatchObject({ id: 8 });
  });

  it('refuses another issuer or audience, or none, naming the claim', async () => {
    expect(await refusal(await claims('https://evil.example', 'tally'))).toBe('token "iss" claim is not accepted');
    expect(await refusal(await claims(null, 'tally'))).toBe('token has no "iss" claim');
    expect(await refusal(await claims(rules.issuer, 'other'))).toBe('token "aud" claim is not accepted');
    expect(await refusal(await claims(rules.issuer, null))).toBe('token has no "aud" claim');
    // Tokens signed without the rules (another service's, with the same secret) do not pass.
    expect(await refusal(await auth.sign(9))).toBe('token has no "iss" claim');
  });
});
