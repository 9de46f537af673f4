// The flag that says Redis is being rebuilt from PostgreSQL: while it is set, reads take
// counts and viewer state from the durable facts instead of Redis, which is incomplete.
import type { Redis, Cluster } from 'ioredis';
import type { Keys } from '../redis/keys.js';

export function createRecoveryFlag(redis: Redis | Cluster, keys: Keys) {
  return {
    /** One EXISTS: issued in the same tick as a page's other reads, it shares their round trip. */
    async isOn(): Promise<boolean> {
      return (await redis.exists(keys.recovering())) === 1;
    },
    async set(): Promise<void> {
      await redis.set(keys.recovering(), JSON.stringify({ since: Date.now() }), 'NX');
    },
    async clear(): Promise<void> {
      await redis.del(keys.recovering());
    },
  };
}

export type RecoveryFlag = ReturnType<typeof createRecoveryFlag>;
