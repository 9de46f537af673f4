import { KafkaJSNonRetriableError } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { relayFor } from '../../src/consumers/relay.js';
import { createEventLogs } from '../../src/events/eventLog.js';
import { AGGREGATOR_GROUP, RELAY_GROUP } from '../../src/events/groups.js';
import { tallyPartitioner, toMessage } from '../../src/events/kafka/messages.js';
import type { CounterEvent } from '../../src/events/types.js';
import { createLogger } from '../../src/log.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { spawnTsx } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

let kafka: TestKafka;
let f: CounterFixture;
beforeAll(async () => {
  kafka = await startKafka();
  console.log(`relay: running against ${kafka.label}`);
  f = createCounterFixture({ partitions: 2, leaseMs: 1000 });
});
afterAll(async () => {
  await f.close();
  await kafka.stop();
});

/** A process of the fixture's deployment on a Kafka topic of its own. */
const envOf = (fixture: CounterFixture) => ({
  NODE_ENV: 'test',
  REDIS_URL: TEST_REDIS_URL,
  REDIS_KEY_PREFIX: fixture.prefix,
  PARTITIONS: String(fixture.partitions),
  CONSUMER_LEASE_MS: '1000',
  ...kafkaEnv(kafka),
});

describe('the Kafka relay', () => {
  it('may send an event twice when it dies before acknowledging, but never loses one, and counts stay exact', async () => {
    const env = envOf(f);
    // Zeroed counters, so the fold adds deltas (missing packed counters would be rebuilt from facts).
    for (let post = 900; post < 904; post++) await f.postCounters.initialize(post);
    for (let u = 1; u <= 30; u++) await f.set(u, 900 + (u % 4));

    const dying = spawnTsx('test/fixtures/dyingRelay.ts', [], env);
    await dying.waitFor(/sent \d+/, 30_000);
    dying.child.kill('SIGKILL');
    await dying.exited;
    const [pending] = await Promise.all(f.allPartitions.map((p) => f.redis.xpending(f.keys.outbox(p), RELAY_GROUP)));
    expect(pending?.[0]).toBeGreaterThan(0); // sent to Kafka, never acknowledged in the outbox
    for (let u = 31; u <= 40; u++) await f.set(u, 900 + (u % 4));

    const logger = createLogger({ logLevel: 'silent' });
    const logs = createEventLogs(loadConfig(env), f.redis, f.keys, logger);
    const relay = relayFor(logs, logger)!;
    const deliveries = new Map<string, number>();
    const aggregation = logs.consumed.subscribe(AGGREGATOR_GROUP, async (batch) => {
      for (const { event } of batch.entries) {
        const key = `${event.partition}/${event.id}`;
        deliveries.set(key, (deliveries.get(key) ?? 0) + 1);
      }
      await f.aggregator.applyBatch(batch);
    });
    await relay.start();
    await aggregation.start();
    try {
      await waitUntil(async () => deliveries.size === 40, { what: 'all 40 events through Kafka', timeoutMs: 40_000 });
      expect([...deliveries.values()].some((n) => n > 1)).toBe(true); // the re-sent batch
      await waitUntil(
        async () => {
          for (const p of f.allPartitions) {
            const newest = (await f.redis.xrevrange(f.keys.outbox(p), '+', '-', 'COUNT', 1))[0]?.[0];
            if (newest && (await f.redis.hget(f.keys.aggState(p), 'event')) !== newest) return false;
          }
          return true;
        },
        { what: 'everything applied' },
      );
    } finally {
      await aggregation.stop();
      await relay.stop();
      await logs.close();
    }
    const folded = await f.flusher.foldPartitions(f.allPartitions);
    expect(folded.rebuilt).toBe(0);
    for (let post = 900; post < 904; post++) expect((await f.countersOf(post))?.[1]).toBe((await f.factsOf(post)).likes);
    expect((await f.factsOf(900)).likes + (await f.factsOf(901)).likes + (await f.factsOf(902)).likes + (await f.factsOf(903)).likes).toBe(
      40,
    );
  }, 90_000);
});

describe('a Kafka consumer', () => {
  it('joins its group again after an error kafkajs gives up on, and loses no event', async () => {
    const own = createCounterFixture({ partitions: 2, leaseMs: 1000 });
    const logger = createLogger({ logLevel: 'silent' });
    const logs = createEventLogs(loadConfig(envOf(own)), own.redis, own.keys, logger);
    const relay = relayFor(logs, logger)!;
    const seen = new Set<string>();
    let crashed = false;
    const aggregation = logs.consumed.subscribe(AGGREGATOR_GROUP, async (batch) => {
      // What a broker's INVALID_REQUEST does: kafkajs stops the consumer and does not restart it.
      if (!crashed) {
        crashed = true;
        throw new KafkaJSNonRetriableError('refused');
      }
      for (const { event } of batch.entries) seen.add(`${event.partition}/${event.id}`);
    });
    await relay.start();
    await aggregation.start();
    try {
      for (let u = 1; u <= 20; u++) await own.set(u, 910 + (u % 4));
      await waitUntil(async () => seen.size === 20, { what: 'all 20 events after the crash', timeoutMs: 30_000 });
      expect(crashed).toBe(true);
    } finally {
      await aggregation.stop();
      await relay.stop();
      await logs.close();
      await own.close();
    }
  }, 60_000);
  it('counts a late copy of relayed events once, in the same fetch as the originals or straddling a later one', async () => {
    // What a relay that lost its lease leaves behind: the new owner re-sent the outbox's
    // entries from the oldest unacknowledged one, and the old owner's send lands after.
    const own = createCounterFixture({ partitions: 1, leaseMs: 1000 });
    const logger = createLogger({ logLevel: 'silent' });
    const logs = createEventLogs(loadConfig(envOf(own)), own.redis, own.keys, logger);
    const target = logs.relayTarget!;
    const producer = target.kafka.producer({ createPartitioner: tallyPartitioner });
    const send = (events: CounterEvent[]) => producer.send({ topic: target.topic, acks: -1, messages: events.map(toMessage) });
    const outboxEvents = async () => (await own.batchOf(0)).entries.map((e) => e.event);
    for (const post of [920, 921]) await own.postCounters.initialize(post);
    const aggregation = logs.consumed.subscribe(AGGREGATOR_GROUP, async (batch) => {
      await own.aggregator.applyBatch(batch);
    });
    const applied = async (events: CounterEvent[]) =>
      waitUntil(async () => (await own.redis.hget(own.keys.aggState(0), 'event')) === events.at(-1)!.id, {
        what: `the aggregator to reach ${events.at(-1)!.id}`,
        timeoutMs: 30_000,
      });
    try {
      await aggregation.start(); // creates the topic
      await producer.connect();
      for (let u = 1; u <= 12; u++) await own.set(u, 920 + (u % 2), u % 3 !== 0);
      const first = await outboxEvents();
      // One send, so one fetch: the events, then a copy of the first six.
      await send([...first, ...first.slice(0, 6)]);
      await applied(first);
      for (let u = 13; u <= 18; u++) await own.set(u, 920 + (u % 2));
      const more = (await outboxEvents()).slice(first.length);
      // A copy of earlier events in front of new ones.
      await send([...first.slice(3, 9), ...more]);
      await applied(more);
    } finally {
      await aggregation.stop();
      await producer.disconnect();
      await logs.close();
    }
    const folded = await own.flusher.foldPartitions(own.allPartitions);
    expect(folded.rebuilt).toBe(0);
    for (const post of [920, 921]) {
      const facts = await own.factsOf(post);
      expect(facts.likes).toBeGreaterThan(0);
      expect((await own.countersOf(post))?.[1]).toBe(facts.likes);
    }
    await own.close();
  }, 60_000);
});
