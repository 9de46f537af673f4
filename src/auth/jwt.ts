// Bearer tokens: HS256 JWTs whose `sub` is the user id. A token that is present but wrong
// is always an error, never a silent fall-back to anonymous. Which claims a token must carry
// (`exp`, `iss`, `aud`) are settings: a token without `exp` would work for good.
import { type JWTPayload, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import { DEFAULT_TOKEN_RULES, type TokenRules } from '../config.js';
import { unauthenticated } from '../errors.js';

export interface Viewer {
  id: number;
  name: string | null;
  /** When the token stops being valid (epoch ms; Infinity without `exp`): a socket closes then. */
  validUntilMs: number;
}

const SUBJECT = /^[1-9][0-9]{0,15}$/;
const MAX_NAME_CHARS = 200;
const CLOCK_TOLERANCE_S = 30;
// A client sends the same token with every request; checking its signature again each time
// (WebCrypto, a few percent of a feed request) tells us nothing new until it expires.
const VERIFIED_MAX = 50_000;
const VERIFIED_TTL_MS = 5 * 60_000;

export function parseSubject(sub: unknown): number | null {
  if (typeof sub !== 'string' || !SUBJECT.test(sub)) return null;
  const id = Number(sub);
  return Number.isSafeInteger(id) ? id : null;
}

/** The `name` claim as we store it: trimmed, at most 200 characters, no NUL; null if absent. */
function displayName(claim: unknown): string | null {
  if (typeof claim !== 'string') return null;
  const name = [...claim.replaceAll('\u0000', '').trim()].slice(0, MAX_NAME_CHARS).join('');
  return name === '' ? null : name;
}

export function createAuth(secret: string, rules: TokenRules = DEFAULT_TOKEN_RULES) {
  const key = new TextEncoder().encode(secret);
  const verifyOptions = {
    algorithms: ['HS256'],
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: rules.requireExp ? ['exp'] : [],
    ...(rules.issuer !== null && { issuer: rules.issuer }),
    ...(rules.audience !== null && { audience: rules.audience }),
  };
  const verified = new LRUCache<string, { viewer: Viewer; validUntilMs: number }>({ max: VERIFIED_MAX, ttl: VERIFIED_TTL_MS });

  return {
    /** The viewer for an `Authorization` header value; null when there is none. */
    async viewerFrom(header: string | undefined): Promise<Viewer | null> {
      if (header === undefined || header === '') return null;
      // The scheme is case-insensitive (RFC 9110, 11.1).
      const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
      if (!match) throw unauthenticated('Authorization header must be "Bearer <token>"');
      const token = match[1]!;
      const known = verified.get(token);
      if (known && Date.now() < known.validUntilMs) return known.viewer;
      let payload: JWTPayload;
      try {
        ({ payload } = await jwtVerify(token, key, verifyOptions));
      } catch (error) {
        throw unauthenticated(refusalOf(error));
      }
      const id = parseSubject(payload.sub);
      if (id === null) throw unauthenticated('token subject must be a positive integer user id below 2^53');
      // Valid until jose would call it expired (exp plus the tolerance), or the cache TTL.
      const validUntilMs = payload.exp === undefined ? Infinity : (payload.exp + CLOCK_TOLERANCE_S) * 1000;
      const viewer = { id, name: displayName(payload.name), validUntilMs };
      verified.set(token, { viewer, validUntilMs });
      return viewer;
    },

    /** Signs a token for `userId` that these rules accept (used by `npm run token` and tests). */
    async sign(userId: number, options: { name?: string; expiresIn?: string } = {}): Promise<string> {
      const jwt = new SignJWT(options.name ? { name: options.name } : {})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(String(userId))
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '30d');
      if (rules.issuer !== null) jwt.setIssuer(rules.issuer);
      if (rules.audience !== null) jwt.setAudience(rules.audience);
      return jwt.sign(key);
    },
  };
}

/**
 * What the client is told: expired, or which claim is wrong (the rules are documented, so
 * naming the claim reveals nothing); anything else is just invalid.
 */
function refusalOf(error: unknown): string {
  if (error instanceof joseErrors.JWTExpired) return 'token expired';
  if (error instanceof joseErrors.JWTClaimValidationFailed && ['exp', 'iss', 'aud'].includes(error.claim)) {
    return error.reason === 'missing' ? `token has no "${error.claim}" claim` : `token "${error.claim}" claim is not accepted`;
  }
  return 'invalid token';
}

export type Auth = ReturnType<typeof createAuth>;
