// Automatic persisted queries for mobile clients: Apollo stores each query under its hash,
// here in Redis so every API replica shares them, and clients then send only the hash.
// Anyone may register a document, so the store is bounded (lua/storePersistedQuery-3.lua):
// per document, in count and in bytes, least recently registered out first. A document too
// large to store still runs; its client just keeps sending it in full.
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { Config } from '../config.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

export type PersistedQueryLimits = Config['persistedQueries'];

export function createPersistedQueryStore(redis: ScriptedRedis, keys: Keys, limits: PersistedQueryLimits): KeyValueCache<string> {
  const ttlMs = limits.ttlS * 1000;
  const scripts = createScripts(redis, keys);
  return {
    async get(key) {
      const [[, document], [, registeredAt]] = (await redis
        .pipeline()
        .hget(keys.persistedQueryDocuments(), key)
        .zscore(keys.persistedQueryRegistrations(), key)
        .exec()) as [[null, string | null], [null, string | null]];
      // Expired documents leave the store at the next registration; until then they are gone here.
      if (document === null || registeredAt === null || Number(registeredAt) < Date.now() - ttlMs) return undefined;
      return document;
    },

    async set(key, document) {
      if (Buffer.byteLength(document) > limits.maxDocumentBytes) return;
      await scripts.storePersistedQuery({
        key,
        document,
        ttlMs,
        maxDocuments: limits.maxDocuments,
        maxBytes: limits.maxBytes,
      });
    },

    // Apollo never deletes a persisted query; an entry leaves by expiry or eviction.
    async delete() {
      return false;
    },
  };
}
