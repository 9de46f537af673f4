// One member of a Kafka consumer group reading one topic, batch by batch: a batch's offset is
// committed only after its handler took the whole of it, so a batch is delivered at least once
// and handlers must be idempotent. Shared by the counter events and the entity lifecycle.
import type { Kafka, KafkaMessage } from 'kafkajs';
import type { Logger } from '../../log.js';

export interface GroupConsumerOptions {
  kafka: Kafka;
  topic: string;
  groupId: string;
  sessionTimeoutMs: number;
  logger: Logger;
  /**
   * Handles one fetched batch of one Kafka partition; resolves false when it stopped part way
   * because `stillOurs()` turned false (the batch is then not committed: it comes again).
   */
  onBatch: (messages: KafkaMessage[], batch: { stillOurs: () => boolean; heartbeat: () => Promise<void> }) => Promise<boolean>;
}

const FETCH_WAIT_MS = 100;
/** How long a consumer that kafkajs gave up on waits before joining its group again. */
const REJOIN_AFTER_MS = 1000;

/** Commit failures that only mean "the group is moving": the batch comes again and is skipped. */
const REBALANCING = /REBALANCE_IN_PROGRESS|NOT_COORDINATOR|UNKNOWN_MEMBER_ID|ILLEGAL_GENERATION|rebalanc/i;

export function createGroupConsumer(options: GroupConsumerOptions) {
  const { topic, logger, groupId } = options;
  const consumer = options.kafka.consumer({
    groupId,
    sessionTimeout: options.sessionTimeoutMs,
    heartbeatInterval: Math.max(500, Math.floor(options.sessionTimeoutMs / 10)),
    // Counts promise freshness within about a second: do not let an idle fetch wait long
    // (some brokers only answer a fetch when its wait runs out).
    maxWaitTimeInMs: FETCH_WAIT_MS,
  });
  let assigned: number[] = [];
  let stopping = false;
  let rejoinTimer: NodeJS.Timeout | undefined;
  let rejoining: Promise<void> | null = null;
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    assigned = payload.memberAssignment[topic] ?? [];
  });

  // kafkajs restarts a consumer after retriable errors only; after any other it stays
  // disconnected and its partitions go unread (librdkafka's mock broker answers a follower's
  // SyncGroup that comes after the leader's with INVALID_REQUEST). Join again: offsets are
  // committed after whole batches, so nothing is lost, and a redelivered batch is skipped.
  const rejoinLater = () => {
    rejoinTimer = setTimeout(() => {
      rejoining = (async () => {
        try {
          await consumer.connect();
          if (!stopping) await run();
        } catch (error) {
          logger.error({ err: error, groupId }, 'Kafka consumer could not join its group again');
          if (!stopping) rejoinLater();
        }
      })().finally(() => {
        rejoining = null;
      });
    }, REJOIN_AFTER_MS);
  };
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (payload.restart || stopping) return; // kafkajs restarts it, or we are stopping
    logger.error({ err: payload.error, groupId }, 'Kafka consumer stopped on an error; joining its group again');
    rejoinLater();
  });

  const run = () =>
    consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
        const whole = await options.onBatch(batch.messages, { stillOurs: () => isRunning() && !isStale(), heartbeat });
        if (!whole || batch.isEmpty()) return;
        resolveOffset(batch.lastOffset()); // the next fetch starts after this batch
        try {
          await consumer.commitOffsets([{ topic, partition: batch.partition, offset: String(Number(batch.lastOffset()) + 1) }]);
        } catch (error) {
          if (!REBALANCING.test(`${(error as { type?: string }).type ?? ''} ${(error as Error).message}`)) throw error;
          logger.warn(
            { groupId, partition: batch.partition },
            'commit refused during a rebalance; the batch will be skipped when it comes again',
          );
        }
      },
    });

  return {
    async start(): Promise<void> {
      await consumer.connect();
      await consumer.subscribe({ topic, fromBeginning: true });
      await run();
    },

    async stop(): Promise<void> {
      stopping = true;
      clearTimeout(rejoinTimer);
      await rejoining;
      await consumer.disconnect();
    },

    /** The topic's partitions this member reads (as of its last join). */
    assigned: () => assigned,
  };
}

/** Creates `topic` when the settings ask for it (an existing topic is only a warning). */
export async function createTopicIfAsked(
  admin: { createTopics: (request: { topics: { topic: string; numPartitions: number }[] }) => Promise<boolean> },
  topic: string,
  createTopic: { partitions: number } | null,
  logger: Logger,
): Promise<void> {
  if (!createTopic) return;
  await admin
    .createTopics({ topics: [{ topic, numPartitions: createTopic.partitions }] })
    .catch((error: unknown) => logger.warn({ err: error, topic }, 'could not create the topic (it may exist)'));
}
