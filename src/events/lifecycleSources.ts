// Where the owning service's entity lifecycle messages (./lifecycleMessage.ts) arrive: a Redis
// stream of their own with EVENT_LOG=redis, a Kafka topic of their own with EVENT_LOG=kafka.
// Both are read by one consumer group, at least once, a batch acknowledged after its handler
// resolved. Order across members does not matter: each message carries the owner's version,
// and the store applies only a newer one (deletion is final).
import type { Kafka } from 'kafkajs';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import { callOnKey } from '../redis/keyedCommand.js';
import type { StreamEntry } from '../redis/scripts.js';
import { createGroupConsumer, createTopicIfAsked } from './kafka/groupConsumer.js';
import { trimOutbox } from './outboxTrimmer.js';
import { createStopSignal } from './stopSignal.js';

export interface LifecycleRecord {
  /** Where it sits in its log (a stream id, or a Kafka offset), for the logs. */
  position: string;
  /** The message's JSON (null when the entry has none). */
  value: string | null;
}

export type LifecycleHandler = (records: LifecycleRecord[]) => Promise<void>;

export interface LifecycleSource {
  start(handler: LifecycleHandler): Promise<void>;
  stop(): Promise<void>;
}

/** The consumer group that applies lifecycle messages (its name on both logs). */
export const LIFECYCLE_GROUP = 'entity-lifecycle';
/** The stream entry's field that holds the message. */
export const LIFECYCLE_FIELD = 'message';

const ERROR_BACKOFF_MS = [100, 500, 2000, 5000];

export interface RedisLifecycleOptions {
  redis: RedisClient;
  stream: string;
  memberId: string;
  batchSize: number;
  /** Entries another member left pending this long are taken over (it died mid-batch). */
  claimIdleMs: number;
  /** Applied entries older than this are trimmed. */
  retentionMs: number;
  logger: Logger;
  idlePollMs?: number;
}

const toRecords = (raw: StreamEntry[]): LifecycleRecord[] =>
  raw.map(([id, fields]) => {
    const at = fields.indexOf(LIFECYCLE_FIELD);
    return { position: id, value: at >= 0 && at % 2 === 0 ? (fields[at + 1] ?? null) : null };
  });

export function createRedisLifecycleSource(options: RedisLifecycleOptions): LifecycleSource {
  const { redis, stream, logger, batchSize } = options;
  const idlePollMs = options.idlePollMs ?? 100;
  const signal = createStopSignal();
  let running: Promise<void> | null = null;

  async function ensureGroup() {
    try {
      await callOnKey(redis, stream, 'XGROUP', 'CREATE', stream, LIFECYCLE_GROUP, '0', 'MKSTREAM');
    } catch (error) {
      if (!String((error as Error).message).startsWith('BUSYGROUP')) throw error;
    }
  }

  /** This member's own pending entries first (after a restart), then new ones, then others' stale ones. */
  async function nextBatch(): Promise<StreamEntry[]> {
    const read = async (from: string) => {
      const reply = (await redis.xreadgroup('GROUP', LIFECYCLE_GROUP, options.memberId, 'COUNT', batchSize, 'STREAMS', stream, from)) as
        | [string, StreamEntry[]][]
        | null;
      return reply?.[0]?.[1] ?? [];
    };
    const own = await read('0');
    if (own.length > 0) return own;
    const fresh = await read('>');
    if (fresh.length > 0) return fresh;
    const [, claimed] = (await callOnKey(
      redis,
      stream,
      'XAUTOCLAIM',
      stream,
      LIFECYCLE_GROUP,
      options.memberId,
      options.claimIdleMs,
      '0-0',
      'COUNT',
      batchSize,
    )) as [string, StreamEntry[]];
    return claimed;
  }

  async function loop(handler: LifecycleHandler) {
    let failures = 0;
    let lastTrim = 0;
    while (!signal.stopped) {
      try {
        const raw = await nextBatch();
        if (raw.length > 0) {
          await handler(toRecords(raw));
          await redis.xack(stream, LIFECYCLE_GROUP, ...raw.map(([id]) => id));
        }
        failures = 0;
        if (Date.now() - lastTrim > options.retentionMs / 10) {
          lastTrim = Date.now();
          await trimOutbox(redis, stream, options.retentionMs);
        }
        if (raw.length < batchSize) await signal.sleep(idlePollMs);
      } catch (error) {
        if (String((error as Error).message).startsWith('NOGROUP')) {
          logger.warn({ stream }, 'entity lifecycle group missing (Redis lost its data?); creating it again');
          await ensureGroup().catch(() => {});
        } else {
          logger.error({ err: error, stream }, 'entity lifecycle batch failed; will retry it');
        }
        await signal.sleep(ERROR_BACKOFF_MS[Math.min(failures++, ERROR_BACKOFF_MS.length - 1)]!);
      }
    }
  }

  return {
    async start(handler) {
      await ensureGroup();
      running = loop(handler);
    },
    async stop() {
      signal.stop();
      await running;
    },
  };
}

export interface KafkaLifecycleOptions {
  kafka: Kafka;
  topic: string;
  groupPrefix: string;
  sessionTimeoutMs: number;
  createTopic: { partitions: number } | null;
  logger: Logger;
}

export function createKafkaLifecycleSource(options: KafkaLifecycleOptions): LifecycleSource {
  const { kafka, topic, logger } = options;
  let consumer: ReturnType<typeof createGroupConsumer> | null = null;
  return {
    async start(handler) {
      const admin = kafka.admin();
      await admin.connect();
      try {
        await createTopicIfAsked(admin, topic, options.createTopic, logger);
      } finally {
        await admin.disconnect();
      }
      consumer = createGroupConsumer({
        kafka,
        topic,
        groupId: options.groupPrefix + LIFECYCLE_GROUP,
        sessionTimeoutMs: options.sessionTimeoutMs,
        logger,
        onBatch: async (messages) => {
          await handler(messages.map((message) => ({ position: message.offset, value: message.value?.toString() ?? null })));
          return true;
        },
      });
      await consumer.start();
    },
    stop: async () => consumer?.stop(),
  };
}
