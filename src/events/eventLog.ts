// The event logs of a deployment. The outbox (Redis streams, written by the Lua write
// script) always exists. With EVENT_LOG=redis consumers read it directly; with
// EVENT_LOG=kafka a relay copies it into the Kafka topic and consumers read Kafka. The owning
// service's entity lifecycle messages come on a stream or topic of their own, on the same log.
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { persistedUpToNow } from './caughtUp.js';
import { AGGREGATOR_GROUP, PERSISTER_GROUP } from './groups.js';
import { createKafkaClient } from './kafka/client.js';
import { createKafkaLog } from './kafka/kafkaLog.js';
import { createKafkaLifecycleSource, createRedisLifecycleSource } from './lifecycleSources.js';
import { createRedisStreamsLog } from './redisStreams.js';
import type { EventLog } from './types.js';

export function createEventLogs(config: Config, redis: ScriptedRedis, keys: Keys, logger: Logger) {
  const outbox = createRedisStreamsLog({
    redis,
    keys,
    logger,
    batchSize: config.aggregatorBatchSize,
    leaseMs: config.consumerLeaseMs,
    memberId: config.memberId,
    retentionMs: config.eventRetentionMs,
  });
  if (config.eventLog === 'redis') {
    return {
      outbox,
      consumed: outbox as EventLog,
      lifecycle: createRedisLifecycleSource({
        redis,
        stream: keys.entityLifecycle(),
        memberId: config.memberId,
        batchSize: config.aggregatorBatchSize,
        claimIdleMs: config.consumerLeaseMs,
        retentionMs: config.eventRetentionMs,
        logger,
      }),
      relayTarget: null,
      lag: () => outbox.lag(),
      // The outbox is lost with the rest of Redis: no event in it is still on its way to PostgreSQL.
      durableLogSettled: async () => true,
      durableLogWritten: async () => false,
      close: async () => {},
    };
  }

  const kafka = createKafkaClient(config.kafka, logger);
  const consumed = createKafkaLog({
    kafka,
    topic: config.kafka.topic,
    partitions: config.partitions,
    groupPrefix: config.kafka.groupPrefix,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    lagGroups: [AGGREGATOR_GROUP, PERSISTER_GROUP],
    createTopic: config.kafka.createTopic ? { partitions: config.kafka.topicPartitions } : null,
    logger,
  });
  return {
    outbox,
    consumed,
    lifecycle: createKafkaLifecycleSource({
      kafka,
      topic: config.kafka.entityTopic,
      groupPrefix: config.kafka.groupPrefix,
      sessionTimeoutMs: config.kafka.sessionTimeoutMs,
      createTopic: config.kafka.createTopic ? { partitions: config.kafka.topicPartitions } : null,
      logger,
    }),
    /** Where the relay (run by workers, src/consumers/relay.ts) copies the outbox to. */
    relayTarget: { kafka, topic: config.kafka.topic, idempotent: config.kafka.idempotent },
    /** Lag of every group: the relay on the outbox, the consumers on Kafka. */
    lag: async () => [...(await outbox.lag()), ...(await consumed.lag())],
    durableLogSettled: persistedUpToNow(consumed),
    /** Events in Kafka outlive Redis: a Redis without its deployment record next to them lost its data. */
    durableLogWritten: async () => (await consumed.everWritten?.()) ?? false,
    close: () => consumed.close(),
  };
}

export type EventLogs = ReturnType<typeof createEventLogs>;
