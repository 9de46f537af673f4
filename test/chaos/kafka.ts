// Kafka for EVENT_LOG=kafka rows: the test broker (librdkafka's mock cluster from kcat, or
// KAFKA_BROKERS), the settings the Kafka tests pass, and two things only the harness does:
// read what the topic holds (what Tally can still know after Redis lost its data) and rewind
// the consumer groups' offsets.
import { Kafka, logLevel } from 'kafkajs';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { onCleanup } from './cleanup.js';
import { type FactKey, factKey, kindNamed } from './truth.js';

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
              const kind = kindNamed(v.m);
              if (kind === undefined) continue;
              const key = factKey(v.u, v.i, kind);
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
 * Sets the groups' committed offsets back to the earliest. kafkajs' admin setOffsets and
 * resetOffsets first ask DescribeGroups, which librdkafka's mock cluster does not implement
 * ("does not support the requested API version"), so the harness commits as a member of each
 * group instead: it joins, and once it holds every partition (the caller stopped the real
 * consumers, so it is alone) commits offset 0 for each, then leaves.
 */
export async function rewindGroups(brokers: string[], topic: string, groupIds: string[]): Promise<void> {
  const kafka = client(brokers);
  const admin = kafka.admin();
  await admin.connect();
  const partitions = (await admin.fetchTopicOffsets(topic)).map((p) => p.partition);
  await admin.disconnect();
  for (const groupId of groupIds) {
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, heartbeatInterval: 1000 });
    let release = () => {};
    await consumer.connect();
    try {
      await consumer.subscribe({ topic, fromBeginning: true });
      const joined = new Promise<number[]>((resolve) =>
        consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => resolve(payload.memberAssignment[topic] ?? [])),
      );
      // Nothing is processed: the batch handler parks until the rewind is committed.
      const parked = new Promise<void>((r) => (release = r));
      await consumer.run({ autoCommit: false, eachBatch: () => parked });
      const assigned = await Promise.race([
        joined,
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`joining ${groupId} timed out`)), 60_000)),
      ]);
      if (assigned.length !== partitions.length)
        throw new Error(`${groupId} still has other members (the harness got ${assigned.length} of ${partitions.length} partitions)`);
      await consumer.commitOffsets(partitions.map((partition) => ({ topic, partition, offset: '0' })));
    } finally {
      release();
      await consumer.disconnect();
    }
  }
  const check = kafka.admin();
  await check.connect();
  try {
    for (const groupId of groupIds) {
      const [committed] = await check.fetchOffsets({ groupId, topics: [topic] });
      const moved = committed?.partitions.filter((p) => p.offset !== '0') ?? [];
      if (moved.length > 0) throw new Error(`rewinding ${groupId} did not take: ${JSON.stringify(moved)}`);
    }
  } finally {
    await check.disconnect();
  }
}
