// Redis isolation for tests and benchmarks: each gets its own key prefix and removes its keys.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from './env.js';

export const uniquePrefix = (label = 't') => `${label}${randomBytes(4).toString('hex')}:`;

/** Calls `each` with every batch of keys under `prefix` (SCAN is fine here: not production). */
async function scanKeys(prefix: string, each: (redis: Redis, keys: string[]) => Promise<unknown>, url: string) {
  const redis = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await each(redis, keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

export const deleteKeys = (prefix: string, url = TEST_REDIS_URL) =>
  scanKeys(prefix, (redis, keys) => redis.unlink(...keys), url);

export async function countKeys(prefix: string, url = TEST_REDIS_URL): Promise<number> {
  let count = 0;
  await scanKeys(prefix, async (_, keys) => (count += keys.length), url);
  return count;
}
