// What stands for a viewer in Redis's view records: keyed hashes (HMAC-SHA256 under the
// deployment's view digest secret), so a stored sketch or window names nobody to whoever
// reads Redis without the secret.
import { createHmac } from 'node:crypto';

export function createViewerDigests(secret: string) {
  const hmac = (text: string) => createHmac('sha256', secret).update(text).digest();
  return {
    /** A user in an entity's sketch of distinct viewers: 48 bits, as the decimal lua/includes/viewBuffer.lua takes. */
    user: (userId: number): string => String(hmac(`user:${userId}`).readUIntBE(0, 6)),
    /** An anonymous client's address, for the key of its view window. */
    address: (address: string): string => hmac(`address:${address}`).subarray(0, 16).toString('base64url'),
  };
}

export type ViewerDigests = ReturnType<typeof createViewerDigests>;
