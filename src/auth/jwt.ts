// Bearer tokens: HS256 JWTs whose `sub` is the user id. A token that is present but wrong
// is always an error, never a silent fall-back to anonymous. Which claims a token must carry
// (`exp`, `iss`, `aud`) are settings: a token without `exp` would work for good.
//
// A service credential is another kind of bearer token: signed with SERVICE_SECRET (never
// JWT_SECRET), audience `tally-service`, its subject the name of the product's service. It
// registers and deletes the entities that service owns and acts as no user; a user token
// never does what a service does.
import { decodeJwt, type JWTPayload, errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import { LRUCache } from 'lru-cache';
import { DEFAULT_TOKEN_RULES, type TokenRules } from '../config.js';
import { forbidden, unauthenticated } from '../errors.js';

/** The audience of every service credential (and of no user token Tally accepts). */
export const SERVICE_AUDIENCE = 'tally-service';
const SERVICE_NAME = /^[a-z][a-z0-9-]{0,63}$/;

export interface Service {
  /** The product's service, as its credential names it. */
  name: string;
}

/** Who a request's token speaks for: a user, a product's service, or nobody (no token). */
export type Caller = { viewer: Viewer; service: null } | { viewer: null; service: Service } | { viewer: null; service: null };

const NOBODY: Caller = { viewer: null, service: null };

/** Whether a token says it is a service credential (read unverified: it only picks the key to verify it with). */
function claimsService(token: string): boolean {
  try {
    const { aud } = decodeJwt(token);
    return aud === SERVICE_AUDIENCE || (Array.isArray(aud) && aud.includes(SERVICE_AUDIENCE));
  } catch {
    return false;
  }
}

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

export function createAuth(secret: string, rules: TokenRules = DEFAULT_TOKEN_RULES, serviceSecret: string | null = null) {
  const key = new TextEncoder().encode(secret);
  const serviceKey = serviceSecret === null ? null : new TextEncoder().encode(serviceSecret);
  const verifyOptions = {
    algorithms: ['HS256'],
    clockTolerance: CLOCK_TOLERANCE_S,
    requiredClaims: rules.requireExp ? ['exp'] : [],
    ...(rules.issuer !== null && { issuer: rules.issuer }),
    ...(rules.audience !== null && { audience: rules.audience }),
  };
  const verified = new LRUCache<string, { viewer: Viewer; validUntilMs: number }>({ max: VERIFIED_MAX, ttl: VERIFIED_TTL_MS });

  async function serviceFrom(token: string): Promise<Service> {
    if (!serviceKey) throw unauthenticated('this deployment accepts no service credentials (SERVICE_SECRET is not set)');
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, serviceKey, {
        algorithms: ['HS256'],
        clockTolerance: CLOCK_TOLERANCE_S,
        audience: SERVICE_AUDIENCE,
      }));
    } catch (error) {
      throw unauthenticated(refusalOf(error));
    }
    if (typeof payload.sub !== 'string' || !SERVICE_NAME.test(payload.sub)) {
      throw unauthenticated("a service credential's subject must name the service (a-z, 0-9 and -, at most 64)");
    }
    return { name: payload.sub };
  }

  const tokenOf = (header: string): string => {
    // The scheme is case-insensitive (RFC 9110, 11.1).
    const match = /^Bearer +([A-Za-z0-9._~+/-]+=*)$/i.exec(header);
    if (!match) throw unauthenticated('Authorization header must be "Bearer <token>"');
    return match[1]!;
  };

  async function viewerOfToken(token: string): Promise<Viewer> {
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
  }

  /** Who an `Authorization` header value speaks for (nobody without one). */
  async function callerFrom(header: string | undefined): Promise<Caller> {
    if (header === undefined || header === '') return NOBODY;
    const token = tokenOf(header);
    if (claimsService(token)) return { viewer: null, service: await serviceFrom(token) };
    return { viewer: await viewerOfToken(token), service: null };
  }

  return {
    callerFrom,

    /** The viewer for an `Authorization` header value; null when there is none (FORBIDDEN for a service credential). */
    async viewerFrom(header: string | undefined): Promise<Viewer | null> {
      const caller = await callerFrom(header);
      if (caller.service) throw forbidden('a service credential acts as no user');
      return caller.viewer;
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

    /** Signs a service credential for the product's service `name` (`npm run token -- --service`). */
    async signService(name: string, options: { expiresIn?: string } = {}): Promise<string> {
      if (!serviceKey) throw new Error('SERVICE_SECRET is not set');
      if (!SERVICE_NAME.test(name)) throw new Error('a service name is a-z, 0-9 and -, at most 64, starting with a letter');
      return new SignJWT({})
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(name)
        .setAudience(SERVICE_AUDIENCE)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '365d')
        .sign(serviceKey);
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
