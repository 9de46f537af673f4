// The event logs of a deployment. The outbox (Redis streams, written by the Lua write
// script) always exists. With EVENT_LOG=redis consumers read it directly; with
// EVENT_LOG=kafka a relay copies it into the Kafka topic and consumers read Kafka.
import type { Config } from '../config.js';
import { AGGREGATOR_GROUP } from '../counters/aggregator.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { PERSISTER_GROUP } from '../relations/factPersister.js';
import { createKafkaClient } from './kafka/client.js';
import { createKafkaLog } from './kafka/kafkaLog.js';
import { createRelay } from './kafka/relay.js';
import { createRedisStreamsLog } from './redisStreams.js';
import type { EventLog } from './types.js';

export function createEventLogs(config: Config, redis: ScriptedRedis, keys: Keys, logger: Logger) {
  const outbox = createRedisStreamsLog({
    redis,
    keys,
    logger,
    batchSize: config.aggregatorBatchSize,
    leaseMs: config.consumerLeaseMs,
    retentionMs: config.eventRetentionMs,
  });
  if (config.eventLog === 'redis') {
    return { outbox, consumed: outbox as EventLog, createRelay: null, lag: () => outbox.lag(), close: async () => {} };
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
    /** Only workers run the relay. */
    createRelay: () => createRelay({ kafka, outbox, topic: config.kafka.topic, idempotent: config.kafka.idempotent, logger }),
    /** Lag of every group: the relay on the outbox, the consumers on Kafka. */
    lag: async () => [...(await outbox.lag()), ...(await consumed.lag())],
    close: () => consumed.close(),
  };
}

export type EventLogs = ReturnType<typeof createEventLogs>;
