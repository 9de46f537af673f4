// The event log contract, run against both adapters: Redis Streams (the embedded default)
// and Kafka (relay + kafkajs consumers) on a real Kafka-protocol broker.
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { relayFor } from '../../src/consumers/relay.js';
import { packCounters } from '../../src/counters/packedCounters.js';
import { createReplay } from '../../src/counters/replay.js';
import { createEventLogs, type EventLogs } from '../../src/events/eventLog.js';
import { AGGREGATOR_GROUP } from '../../src/events/groups.js';
import type { EventBatch, Subscription } from '../../src/events/types.js';
import { createLogger } from '../../src/log.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { spawnTsx } from '../support/process.js';
import { waitUntil } from '../support/wait.js';

const PARTITIONS = 4;
let kafka: TestKafka;
beforeAll(async () => {
  kafka = await startKafka();
  console.log(`event log contract: Kafka adapter runs against ${kafka.label}`);
});
afterAll(() => kafka.stop());

describe.each(['redis', 'kafka'] as const)('event log contract: %s', (adapter) => {
  let f: CounterFixture;
  let env: Record<string, string>;
  let logs: EventLogs;
  const started: { stop(): Promise<void> }[] = [];

  beforeEach(async () => {
    f = createCounterFixture({ partitions: PARTITIONS, leaseMs: 1000 });
    env = {
      NODE_ENV: 'test',
      REDIS_URL: TEST_REDIS_URL,
      REDIS_KEY_PREFIX: f.prefix,
      PARTITIONS: String(PARTITIONS),
      CONSUMER_LEASE_MS: '1000',
      AGGREGATOR_BATCH_SIZE: '50',
      EVENT_RETENTION_MS: '3600000',
      ...kafkaEnv(kafka),
      EVENT_LOG: adapter,
    };
    const logger = createLogger({ logLevel: 'silent' });
    logs = createEventLogs(loadConfig(env), f.redis, f.keys, logger);
    await f.redis.hset(f.keys.meta(), 'history', 'complete'); // a deployment that starts now
    const relay = relayFor(logs, logger);
    if (relay) {
      await relay.start();
      started.push(relay);
    }
  });
  afterEach(async () => {
    for (const s of started.splice(0).reverse()) await s.stop();
    await logs.close();
    await f.close();
  }, 30_000);

  async function consume(handler: (batch: EventBatch) => Promise<void>): Promise<Subscription> {
    const subscription = logs.consumed.subscribe(AGGREGATOR_GROUP, handler);
    await subscription.start();
    started.push(subscription);
    return subscription;
  }
  const stopOne = async (s: Subscription) => {
    started.splice(started.indexOf(s), 1);
    await s.stop();
  };

  /** Every handled event, by partition and id, with how often it came. */
  function recorder() {
    const seen = new Map<string, number>();
    return {
      seen,
      handler: async (batch: EventBatch) => {
        for (const { event } of batch.entries) {
          const key = `${event.partition}/${event.id}`;
          seen.set(key, (seen.get(key) ?? 0) + 1);
        }
      },
    };
  }
  const written = async () => {
    const all = await Promise.all(f.allPartitions.map((p) => f.batchOf(p)));
    return all.flatMap((b) => b.entries.map((e) => `${b.partition}/${e.event.id}`));
  };
  const writeLikes = async (from: number, to: number, posts = 12) => {
    for (let u = from; u <= to; u++) await f.set(u, 700 + (u % posts));
  };
  async function expectCountsEqualFacts(posts: number[]) {
    await f.flusher.foldPartitions(f.allPartitions);
    for (const post of posts) {
      const facts = await f.factsOf(post);
      expect({ post, likes: (await f.countersOf(post))?.[1] ?? 0, favs: (await f.countersOf(post))?.[2] ?? 0 }).toEqual({ post, ...facts });
    }
  }
  const allApplied = async () => {
    for (const p of f.allPartitions) {
      const newest = (await f.redis.xrevrange(f.keys.outbox(p), '+', '-', 'COUNT', 1))[0]?.[0];
      if (newest && (await f.redis.hget(f.keys.aggState(p), 'event')) !== newest) return false;
    }
    return true;
  };

  it("delivers each entity's events in the order they happened", async () => {
    const order = new Map<string, string[]>();
    await consume(async (batch) => {
      for (const { event } of batch.entries) {
        const key = `${event.entityType}:${event.entityId}`;
        order.set(key, [...(order.get(key) ?? []), event.id]);
      }
    });
    // Every call flips a user's like, so each one is a real change: 60 events.
    for (let round = 0; round < 12; round++) {
      for (let u = 1; u <= 5; u++) await f.set(u, 800 + (u % 3), round % 2 === 0);
    }
    await waitUntil(async () => [...order.values()].flat().length === 60, { what: 'all events', timeoutMs: 30_000 });
    for (const ids of order.values()) {
      const sorted = [...ids].sort((a, b) => (a.split('-').map(Number) < b.split('-').map(Number) ? -1 : 1));
      expect(ids).toEqual(sorted);
    }
  }, 60_000);

  it('counts exactly once when a consumer dies between applying and acknowledging', async () => {
    await writeLikes(1, 40);
    const crashing = spawnTsx('test/fixtures/crashingAggregator.ts', [], env);
    await crashing.waitFor(/applied \d+/, 30_000);
    crashing.child.kill('SIGKILL');
    await crashing.exited;
    await writeLikes(41, 60);

    await consume((batch) => f.aggregator.applyBatch(batch).then(() => {}));
    await waitUntil(allApplied, { what: 'the survivor to apply everything', timeoutMs: 40_000 });
    await expectCountsEqualFacts(Array.from({ length: 12 }, (_, i) => 700 + i));
  }, 90_000);

  it('resumes after the committed position when a consumer restarts', async () => {
    const first = recorder();
    const a = await consume(first.handler);
    await writeLikes(1, 30);
    await waitUntil(async () => first.seen.size === 30, { what: 'the first 30', timeoutMs: 30_000 });
    await stopOne(a);

    await writeLikes(31, 50);
    const second = recorder();
    await consume(second.handler);
    await waitUntil(async () => second.seen.size === 20, { what: 'the next 20', timeoutMs: 30_000 });
    expect([...second.seen.keys()].filter((k) => first.seen.has(k))).toEqual([]);
    expect(new Set([...first.seen.keys(), ...second.seen.keys()])).toEqual(new Set(await written()));
  }, 60_000);

  it('rebalances between two consumers without losing an event or counting one twice', async () => {
    // Delivery is at least once: a batch whose commit a rebalance refused comes again to the
    // new owner. What must hold is that nothing is lost and nothing is counted twice.
    const [one, two] = [recorder(), recorder()];
    const applying = (r: ReturnType<typeof recorder>) => async (batch: EventBatch) => {
      await r.handler(batch);
      await f.aggregator.applyBatch(batch);
    };
    const a = await consume(applying(one));
    await consume(applying(two));
    await writeLikes(1, 40);
    await waitUntil(async () => new Set([...one.seen.keys(), ...two.seen.keys()]).size >= 40, { what: 'the first 40', timeoutMs: 30_000 });
    await stopOne(a); // its partitions move to the other consumer
    await writeLikes(41, 80);
    await waitUntil(async () => new Set([...one.seen.keys(), ...two.seen.keys()]).size === 80, { what: 'all 80', timeoutMs: 40_000 });
    expect(new Set([...one.seen.keys(), ...two.seen.keys()])).toEqual(new Set(await written()));
    await waitUntil(allApplied, { what: 'everything applied', timeoutMs: 20_000 });
    await expectCountsEqualFacts(Array.from({ length: 12 }, (_, i) => 700 + i));
  }, 90_000);

  it('replays from the earliest event and reproduces the counts exactly', async () => {
    await consume((batch) => f.aggregator.applyBatch(batch).then(() => {}));
    await writeLikes(1, 50, 6);
    for (let u = 1; u <= 10; u++) await f.set(u, 700 + (u % 6), false);
    await waitUntil(allApplied, { what: 'the aggregator', timeoutMs: 30_000 });
    const posts = Array.from({ length: 6 }, (_, i) => 700 + i);
    await f.flusher.foldPartitions(f.allPartitions);
    for (const post of posts) await f.redis.set(f.keys.counters({ type: 'post', id: post }), packCounters([0, 999, 9, 0, 0]));

    // This deployment has erased nobody (no database here): an empty erasure list.
    const noErasures = { running: async () => [], allIds: async () => new Set<number>() };
    await createReplay({ redis: f.redis, keys: f.keys, eventLog: logs.consumed, erasures: noErasures }).run();
    await expectCountsEqualFacts(posts);
  }, 60_000);
});
