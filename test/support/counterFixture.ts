// The counter pipeline wired against real Redis without the HTTP layer: its own key prefix,
// few partitions, short leases. Tests drive each stage (write, aggregate, fold) by hand.

import { createAggregator } from '../../src/consumers/aggregator.js';
import { createFlusher } from '../../src/counters/flush.js';
import { unpackCounters } from '../../src/counters/packedCounters.js';
import { createPostCounters } from '../../src/counters/postCounters.js';
import { POST } from '../../src/domain/entities.js';
import { KINDS } from '../../src/domain/kinds.js';
import { FAV, LIKE, type PostRelationKind } from '../../src/domain/relations.js';
import { decodeOutboxEntry } from '../../src/events/outboxCodec.js';
import { createRedisStreamsLog, OUTBOX_SOURCE } from '../../src/events/redisStreams.js';
import type { EventBatch } from '../../src/events/types.js';
import { createLogger } from '../../src/log.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { createRedis } from '../../src/redis/client.js';
import { createKeys } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { createRelationStore } from '../../src/relations/relationStore.js';
import { TEST_REDIS_URL } from './env.js';
import { deleteKeys, uniquePrefix } from './redis.js';

export function createCounterFixture(options: { partitions?: number; leaseMs?: number } = {}) {
  const prefix = uniquePrefix();
  const partitions = options.partitions ?? 2;
  const leaseMs = options.leaseMs ?? 1000;
  const keys = createKeys(prefix, partitions);
  const logger = createLogger({ logLevel: process.env.LOG_LEVEL ?? 'silent' });
  const redis = withScripts(createRedis(TEST_REDIS_URL, logger));
  const relations = createRelationStore(redis, keys);
  // A deployment whose Redis holds every fact (no recovery in these tests), marked on first write.
  let ready: Promise<void> | null = null;
  const aggregator = createAggregator({ redis, keys, logger });
  const flusher = createFlusher({ redis, keys, viewsExactUpTo: 1000 });
  const postCounters = createPostCounters({ redis, keys });
  const allPartitions = Array.from({ length: partitions }, (_, p) => p);

  return {
    prefix,
    partitions,
    leaseMs,
    keys,
    redis,
    relations,
    aggregator,
    flusher,
    postCounters,
    allPartitions,

    /** One member's view of the event log (each call is another member, unless named). */
    eventLog: (batchSize = 100, memberId = uniquePrefix('member')) =>
      createRedisStreamsLog({ redis, keys, logger, batchSize, leaseMs, memberId, retentionMs: 0, idlePollMs: 10, trimIntervalMs: 0 }),

    set: async (userId: number, postId: number, active = true, kind: PostRelationKind = 'LIKE') => {
      ready ??= createReadiness(redis, keys).markAllReady();
      await ready;
      return relations.set({ userId, postId, authorId: 1, kind, active });
    },

    /** `userId`'s reaction `content` on the post. */
    react: async (userId: number, postId: number, content: string, active = true) => {
      ready ??= createReadiness(redis, keys).markAllReady();
      await ready;
      return relations.setFact({ userId, entity: { type: POST, id: postId }, relation: KINDS.reaction(content)!, authorId: 1, active });
    },

    /** Outbox entries of a partition as the event log would deliver them (optionally a range). */
    async batchOf(partition: number, start = '-', end = '+'): Promise<EventBatch> {
      const raw = (await redis.xrange(keys.outbox(partition), start, end)) as [string, string[]][];
      return {
        partition,
        source: OUTBOX_SOURCE,
        entries: raw.map(([id, fields]) => ({ position: id, event: decodeOutboxEntry(id, partition, fields)! })),
      };
    },

    /** The post's packed counters as stored (null when missing or malformed). */
    async countersOf(postId: number): Promise<number[] | null> {
      return unpackCounters(await redis.getBuffer(keys.counters({ type: 'post' as const, id: postId })));
    },

    /** Likes and favs counted straight from the bitmaps. */
    async factsOf(postId: number): Promise<{ likes: number; favs: number }> {
      const post = { type: 'post' as const, id: postId };
      const { counters } = await createScripts(redis, keys).countFromFacts(post);
      return { likes: counters[LIKE.slot!]!, favs: counters[FAV.slot!]! };
    },

    /** A post id that lands in `partition`. */
    postIn(partition: number, after = 0): number {
      for (let id = after + 1; ; id++) if (keys.partitionOf({ type: 'post', id }) === partition) return id;
    },

    async close() {
      redis.disconnect();
      await deleteKeys(prefix);
    },
  };
}

export type CounterFixture = ReturnType<typeof createCounterFixture>;
