// Kafka for EVENT_LOG=kafka rows: the test broker (librdkafka's mock cluster from kcat, or
// KAFKA_BROKERS), the settings the Kafka tests pass, and two things only the harness does:
// read what the topic holds (what Tally can still know after Redis lost its data) and rewind
// the consumer groups' offsets.
import { Kafka, logLevel } from 'kafkajs';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { onCleanup } from './cleanup.js';
import { factKey, type FactKey } from './truth.js';

export interface ChaosKafka {
  kafka: TestKafka;
  stop(): Promise<void>;
}

export async function startChaosKafka(): Promise<ChaosKafka> {
  const kafka = await startKafka();
  const stop = onCleanup(`kafka (${kafka.label})`, () => kafka.stop());
  return { kafka, stop };
}

/** What test/e2e/likesKafka.test.ts passes (a topic and groups of its own), plus topic creation. */
export function chaosKafkaEnv(kafka: TestKafka): Record<string, string> {
  return { ...kafkaEnv(kafka), KAFKA_CREATE_TOPIC: 'true' };
}

const client = (brokers: string[]) => new Kafka({ clientId: 'tally-chaos', brokers, logLevel: logLevel.NOTHING });

/** Compares outbox event ids (`<ms>-<seq>`). */
const newer = (a: string, b: string) => {
  const [am, as] = a.split('-').map(Number) as [number, number];
  const [bm, bs] = b.split('-').map(Number) as [number, number];
  return am !== bm ? am > bm : as > bs;
};

/**
 * The newest state of every post fact among the topic's events written before `beforeMs`
 * (by event id, the outbox time): the durable knowledge Kafka holds of the time before a
 * Redis loss. Reads with a fresh group from the earliest offset up to the current ends.
 */
export async function readTopicFacts(brokers: string[], topic: string, beforeMs: number): Promise<Map<FactKey, boolean>> {
  const kafka = client(brokers);
  const admin = kafka.admin();
  await admin.connect();
  const ends = await admin.fetchTopicOffsets(topic);
  await admin.disconnect();
  const remaining = new Map(ends.filter((e) => Number(e.high) > Number(e.low)).map((e) => [e.partition, Number(e.high)]));
  const newest = new Map<FactKey, { id: string; active: boolean }>();
  if (remaining.size === 0) return new Map();
  const consumer = kafka.consumer({ groupId: `chaos-read-${Date.now()}-${Math.random().toString(36).slice(2)}` });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`reading topic ${topic} timed out`)), 60_000);
      consumer
        .run({
          autoCommit: false,
          eachBatch: async ({ batch }) => {
            const end = remaining.get(batch.partition);
            if (end === undefined) return;
            for (const message of batch.messages) {
              if (Number(message.offset) >= end) continue;
              const id = message.headers?.['event-id']?.toString();
              if (!id || !message.value || Number(id.split('-')[0]) >= beforeMs) continue;
              const v = JSON.parse(message.value.toString()) as { e: string; i: number; m: string; u: number; d: number };
              if (v.e !== 'post') continue;
              const key = factKey(v.u, v.i, v.m === 'fav' ? 'FAV' : 'LIKE');
              const seen = newest.get(key);
              if (!seen || newer(id, seen.id)) newest.set(key, { id, active: v.d > 0 });
            }
            if (!batch.isEmpty() && Number(batch.lastOffset()) + 1 >= end) remaining.delete(batch.partition);
            if (remaining.size === 0) {
              clearTimeout(timer);
              resolve();
            }
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
  return new Map([...newest].map(([k, v]) => [k, v.active]));
}

/**
 * Sets the groups' committed offsets back to the earliest. Kafka (and kafkajs) refuse this
 * while a group has members, so the caller stops the consumers first; this waits until the
 * groups are empty.
 */
export async function rewindGroups(brokers: string[], topic: string, groupIds: string[]): Promise<void> {
  const admin = client(brokers).admin();
  await admin.connect();
  try {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { groups } = await admin.describeGroups(groupIds);
      if (groups.every((g) => g.state === 'Empty' || g.state === 'Dead')) break;
      if (Date.now() > deadline) throw new Error(`consumer groups still have members: ${groups.map((g) => `${g.groupId}=${g.state}`).join(', ')}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    for (const groupId of groupIds) await admin.resetOffsets({ groupId, topic, earliest: true });
  } finally {
    await admin.disconnect();
  }
}
