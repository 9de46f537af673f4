// Automatic persisted queries for mobile clients: Apollo stores each query under its hash,
// here in Redis so every API replica shares them, and clients then send only the hash.
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { Cluster, Redis } from 'ioredis';
import type { Keys } from '../redis/keys.js';

export function createPersistedQueryStore(redis: Redis | Cluster, keys: Keys): KeyValueCache<string> {
  return {
    async get(key) {
      return (await redis.get(keys.persistedQuery(key))) ?? undefined;
    },
    async set(key, value, options) {
      if (options?.ttl) await redis.set(keys.persistedQuery(key), value, 'EX', options.ttl);
      else await redis.set(keys.persistedQuery(key), value);
    },
    async delete(key) {
      return (await redis.del(keys.persistedQuery(key))) > 0;
    },
  };
}
