// Opaque, tamper-checked pagination cursors: base64url(JSON) + "." + HMAC. The kind is part
// of the MAC, so a cursor from one list is refused by another.
import { createHmac, createSecretKey, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { badInput } from '../errors.js';

const MAC_BYTES = 12;
const MAX_CURSOR_LENGTH = 512;
/** Signed cursors kept: every reader of a hot page asks for the same end cursor. */
const SIGNED_MAX = 10_000;

export function createCursorCodec(secret: string) {
  // A key object once, instead of the secret string imported again for every MAC.
  const key = createSecretKey(Buffer.from(secret));
  const signed = new LRUCache<string, string>({ max: SIGNED_MAX });
  const mac = (kind: string, body: string) =>
    createHmac('sha256', key).update(`${kind}:${body}`).digest().subarray(0, MAC_BYTES);

  return {
    encode(kind: string, payload: unknown): string {
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      const unsigned = `${kind}:${body}`;
      let cursor = signed.get(unsigned);
      if (cursor === undefined) {
        cursor = `${body}.${mac(kind, body).toString('base64url')}`;
        signed.set(unsigned, cursor);
      }
      return cursor;
    },

    /** Returns the payload, or throws BAD_USER_INPUT for anything this service did not sign. */
    decode(kind: string, cursor: string): unknown {
      const invalid = () => badInput('invalid cursor', { argumentName: 'after' });
      if (cursor.length > MAX_CURSOR_LENGTH) throw invalid();
      const [body, signature, extra] = cursor.split('.');
      if (!body || !signature || extra !== undefined) throw invalid();
      // Compare the text, not decoded bytes: base64url decoding ignores trailing garbage.
      const given = Buffer.from(signature);
      const expected = Buffer.from(mac(kind, body).toString('base64url'));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw invalid();
      try {
        return JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      } catch {
        throw invalid();
      }
    },
  };
}

export type CursorCodec = ReturnType<typeof createCursorCodec>;
