// Redis isolation for tests: every file gets its own key prefix and removes its keys after.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from './env.js';

export const uniquePrefix = () => `t${randomBytes(4).toString('hex')}:`;

/** Deletes every key under `prefix` (SCAN is fine here: test-only, small key space). */
export async function deleteKeys(prefix: string, url = TEST_REDIS_URL): Promise<void> {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await redis.unlink(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}
