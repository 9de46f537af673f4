// Opaque pagination cursors: the payload is encrypted and authenticated, so a client can
// neither read a cursor (a position is a time and an id: who liked when) nor forge or edit
// one. The list's name is part of the authentication, so a cursor of one list is refused by
// another.
//
// Construction (SIV: a synthetic IV): iv = HMAC-SHA256(macKey, list ‖ payload)[0..16],
// cursor = base64url(iv ‖ AES-256-CTR(encKey, iv, payload)). Decoding decrypts and recomputes
// the HMAC, which must equal the iv. It is deterministic (the same position gives the same
// cursor, so every reader of a hot page shares one), and reveals only that two cursors are
// equal. Both keys are derived from CURSOR_SECRET with HKDF.
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hkdfSync, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { badInput } from '../errors.js';

const IV_BYTES = 16;
const MAX_CURSOR_LENGTH = 512;
/** Encoded cursors kept: every reader of a hot page asks for the same end cursor. */
const ENCODED_MAX = 10_000;

function deriveKey(secret: string, use: string) {
  return createSecretKey(Buffer.from(hkdfSync('sha256', secret, 'tally cursors', use, 32)));
}

export function createCursorCodec(secret: string) {
  const encKey = deriveKey(secret, 'encryption');
  const macKey = deriveKey(secret, 'authentication');
  const encoded = new LRUCache<string, string>({ max: ENCODED_MAX });
  const syntheticIv = (list: string, plaintext: Buffer) =>
    createHmac('sha256', macKey).update(list).update('\0').update(plaintext).digest().subarray(0, IV_BYTES);
  const ctr = (iv: Buffer, input: Buffer, decrypt = false) => {
    const cipher = decrypt ? createDecipheriv('aes-256-ctr', encKey, iv) : createCipheriv('aes-256-ctr', encKey, iv);
    return Buffer.concat([cipher.update(input), cipher.final()]);
  };

  return {
    encode(list: string, payload: unknown): string {
      const json = JSON.stringify(payload);
      const cacheKey = `${list}\0${json}`;
      let cursor = encoded.get(cacheKey);
      if (cursor === undefined) {
        const plaintext = Buffer.from(json);
        const iv = syntheticIv(list, plaintext);
        cursor = Buffer.concat([iv, ctr(iv, plaintext)]).toString('base64url');
        encoded.set(cacheKey, cursor);
      }
      return cursor;
    },

    /** Returns the payload, or throws BAD_USER_INPUT for anything this service did not issue for `list`. */
    decode(list: string, cursor: string): unknown {
      const invalid = () => badInput('invalid cursor', { argumentName: 'after' });
      if (cursor.length > MAX_CURSOR_LENGTH) throw invalid();
      const bytes = Buffer.from(cursor, 'base64url');
      // Decoding skips characters outside the alphabet: only the exact text we issued counts.
      if (bytes.length <= IV_BYTES || bytes.toString('base64url') !== cursor) throw invalid();
      const iv = bytes.subarray(0, IV_BYTES);
      const plaintext = ctr(iv, bytes.subarray(IV_BYTES), true);
      if (!timingSafeEqual(iv, syntheticIv(list, plaintext))) throw invalid();
      try {
        return JSON.parse(plaintext.toString('utf8'));
      } catch {
        throw invalid();
      }
    },
  };
}

export type CursorCodec = ReturnType<typeof createCursorCodec>;
