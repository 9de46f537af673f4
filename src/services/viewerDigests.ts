// What stands for a viewer in Redis's view records: keyed hashes (HMAC-SHA256 under the
// deployment's view digest secret), so a stored sketch or window names nobody to whoever
// reads Redis without the secret.
import { createHmac } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** Users whose digests an API process keeps: a feed's viewers record a page every few seconds. */
const USER_DIGESTS_KEPT = 10_000;

export function createViewerDigests(secret: string) {
  const hmac = (text: string) => createHmac('sha256', secret).update(text).digest();
  const userDigests = new LRUCache<number, string>({ max: USER_DIGESTS_KEPT });
  return {
    /** A user in an entity's sketch of distinct viewers: 48 bits, as the decimal lua/includes/viewBuffer.lua takes. */
    user(userId: number): string {
      let digest = userDigests.get(userId);
      if (digest === undefined) {
        digest = String(hmac(`user:${userId}`).readUIntBE(0, 6));
        userDigests.set(userId, digest);
      }
      return digest;
    },
    /** An anonymous client's address, for the key of its view window. */
    address: (address: string): string => hmac(`address:${address}`).subarray(0, 16).toString('base64url'),
  };
}

export type ViewerDigests = ReturnType<typeof createViewerDigests>;
