// The Kafka adapter of the event log port. Consumers are group members (./groupConsumer.ts)
// that commit a Kafka partition's offset only after the whole batch was handled. A Kafka batch
// can hold events of several Tally partitions (N mod topic partitions); it is handed over
// one Tally partition at a time, in order, with the outbox event ids as positions, so the
// same applied-position record skips a redelivered batch whichever log carried it.
import { randomBytes } from 'node:crypto';
import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from '../../log.js';
import { OUTBOX_SOURCE } from '../redisStreams.js';
import { type BatchHandler, comparePositions, type EventLog, type GroupLag, type LogEntry, type Subscription } from '../types.js';
import { createGroupConsumer, createTopicIfAsked } from './groupConsumer.js';
import { fromMessage } from './messages.js';

export interface KafkaLogOptions {
  kafka: Kafka;
  topic: string;
  /** Tally's partition count P. */
  partitions: number;
  groupPrefix: string;
  sessionTimeoutMs: number;
  /** Groups whose lag `lag()` reports (besides those subscribed in this process). */
  lagGroups: string[];
  createTopic: { partitions: number } | null;
  logger: Logger;
}

export function createKafkaLog(options: KafkaLogOptions): EventLog {
  const { kafka, topic, logger } = options;
  let admin: Admin | null = null;
  const groups = new Set(options.lagGroups);

  async function connectedAdmin(): Promise<Admin> {
    if (!admin) {
      admin = kafka.admin();
      await admin.connect();
    }
    return admin;
  }

  async function topicPartitionCount(): Promise<number> {
    const { topics } = await (await connectedAdmin()).fetchTopicMetadata({ topics: [topic] });
    return topics[0]?.partitions.length ?? 0;
  }

  /**
   * Splits a Kafka batch by Tally partition, keeping log order within each, and drops each
   * event at or below a position already met in its partition: the late copy of a send by a
   * relay that lost its partition to another, which had re-sent it (the outbox is read in
   * order, under the lease: whatever a relay sends is the next entries or a copy of earlier ones).
   */
  function byTallyPartition(messages: Parameters<typeof fromMessage>[0][]): Map<number, LogEntry[]> {
    const split = new Map<number, LogEntry[]>();
    for (const message of messages) {
      const event = fromMessage(message);
      if (!event) {
        logger.error({ topic, offset: message.offset }, 'skipping a Kafka message Tally cannot decode');
        continue;
      }
      const entries = split.get(event.partition) ?? [];
      const newest = entries.at(-1);
      if (newest && comparePositions(event.id, newest.position) <= 0) continue;
      entries.push({ position: event.id, event });
      split.set(event.partition, entries);
    }
    return split;
  }

  function subscribe(group: string, handler: BatchHandler): Subscription {
    groups.add(group);
    let topicPartitions = 0;
    const consumer = createGroupConsumer({
      kafka,
      topic,
      groupId: options.groupPrefix + group,
      sessionTimeoutMs: options.sessionTimeoutMs,
      logger,
      onBatch: async (messages, { stillOurs, heartbeat }) => {
        for (const [partition, entries] of byTallyPartition(messages)) {
          if (!stillOurs()) return false; // not committed: comes again, and is skipped
          await handler({ partition, source: OUTBOX_SOURCE, entries });
          await heartbeat();
        }
        return true;
      },
    });

    return {
      async start() {
        await createTopicIfAsked(await connectedAdmin(), topic, options.createTopic, logger);
        await consumer.start();
        topicPartitions = await topicPartitionCount();
      },

      stop: () => consumer.stop(),

      assignedPartitions() {
        if (topicPartitions === 0) return [];
        const assigned = consumer.assigned();
        return Array.from({ length: options.partitions }, (_, n) => n).filter((n) => assigned.includes(n % topicPartitions));
      },
    };
  }

  async function lag(): Promise<GroupLag[]> {
    const kafkaAdmin = await connectedAdmin();
    const ends = await kafkaAdmin.fetchTopicOffsets(topic);
    const result: GroupLag[] = [];
    for (const group of groups) {
      const [committed] = await kafkaAdmin.fetchOffsets({ groupId: options.groupPrefix + group, topics: [topic] });
      for (const end of ends) {
        const at = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
        const undelivered = Number(end.high) - Math.max(at, Number(end.low));
        // Reported per Tally partition, the unit the rest of Tally reasons in.
        for (let n = end.partition; n < options.partitions; n += ends.length) {
          result.push({ group, partition: n, pending: 0, undelivered });
        }
      }
    }
    return result;
  }

  async function readHistory(onEntries: (partition: number, entries: LogEntry[]) => Promise<void>): Promise<void> {
    const ends = await (await connectedAdmin()).fetchTopicOffsets(topic);
    const remaining = new Map(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]));
    if (remaining.size === 0) return;
    // A fresh group from the earliest offset: replay never moves the real groups' offsets.
    const consumer = kafka.consumer({ groupId: `${options.groupPrefix}tally-replay-${Date.now()}-${randomBytes(3).toString('hex')}` });
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      await new Promise<void>((resolve, reject) => {
        consumer
          .run({
            autoCommit: false,
            eachBatch: async ({ batch }) => {
              const end = remaining.get(batch.partition);
              if (end === undefined) return;
              const upToEnd = batch.messages.filter((m) => Number(m.offset) < end);
              for (const [partition, entries] of byTallyPartition(upToEnd)) await onEntries(partition, entries);
              if (!batch.isEmpty() && Number(batch.lastOffset()) + 1 >= end) remaining.delete(batch.partition);
              if (remaining.size === 0) resolve();
            },
          })
          .catch(reject);
      });
    } finally {
      await consumer.disconnect();
    }
  }

  /** Resolves a check that turns true once `group` has committed past every message the topic holds now. */
  async function consumedUpToNow(group: string): Promise<() => Promise<boolean>> {
    const kafkaAdmin = await connectedAdmin();
    const ends = await kafkaAdmin.fetchTopicOffsets(topic);
    return async () => {
      const [committed] = await kafkaAdmin.fetchOffsets({ groupId: options.groupPrefix + group, topics: [topic] });
      return ends.every((end) => {
        const at = Number(committed?.partitions.find((p) => p.partition === end.partition)?.offset ?? -1);
        return Math.max(at, Number(end.low)) >= Number(end.high);
      });
    };
  }

  return {
    subscribe,
    lag,
    readHistory,
    consumedUpToNow,
    async everWritten() {
      const ends = await (await connectedAdmin()).fetchTopicOffsets(topic).catch(() => []);
      return ends.some((end) => Number(end.high) > 0);
    },
    async historyComplete() {
      const ends = await (await connectedAdmin()).fetchTopicOffsets(topic);
      return ends.every((e) => Number(e.low) === 0);
    },
    async close() {
      await admin?.disconnect();
      admin = null;
    },
  };
}
