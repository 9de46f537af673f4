// The owning service tells Tally about its entities through the event log, on a stream or
// topic of their own: registrations and deletions applied by version, whatever their order,
// a deletion seen on every API replica within a second, and a message Tally cannot apply
// skipped without holding up the ones behind it.
import { Redis } from 'ioredis';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { LIFECYCLE_FIELD } from '../../src/events/lifecycleSources.js';
import { errorCodes, startTestApp, type TestApp } from '../support/app.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { waitFor } from '../support/wait.js';

// The registry is built from the process's settings at import: set them before anything loads it.
vi.hoisted(() => {
  process.env.ENTITY_TYPES = 'comment;video:like,reactions:unowned';
});

interface Message {
  v: unknown;
  op: string;
  type: string;
  id: string;
  version: string | number;
  ownerId?: string;
}
const register = (id: string, version: string | number = '1', ownerId = '70'): Message => ({
  v: 1,
  op: 'register',
  type: 'comment',
  id,
  version,
  ownerId,
});
const remove = (id: string, version: string | number = '2'): Message => ({ v: 1, op: 'delete', type: 'comment', id, version });

/** Sends messages (or raw values) as the owning service would. */
type Send = (messages: (Message | string)[]) => Promise<void>;

const LIKE = `mutation($id: ID!) { setEntityRelation(input: { type: "comment", id: $id, active: true }) { changed } }`;
const READ = `query($ids: [ID!]!) { entities(type: "comment", ids: $ids) { id counts { likes } } }`;

describe.each(['redis', 'kafka'] as const)('entity lifecycle messages with EVENT_LOG=%s', (log) => {
  let kafka: TestKafka | null = null;
  let t: TestApp;
  let replica: TestApp;
  let send: Send;
  let close: () => Promise<void>;
  let user: string;

  const like = async (app: TestApp, id: string) => {
    const res = await app.gql(LIKE, { id }, { token: user });
    return res.errors ? errorCodes(res).join() : 'liked';
  };
  /** Messages counted by both processes' workers (either may read a batch). */
  const counted = async (op: string, outcome: string) => {
    let n = 0;
    for (const app of [t, replica]) {
      const { values } = await app.app.metrics.lifecycleMessages.get();
      n += values.find((v) => v.labels.op === op && v.labels.outcome === outcome)?.value ?? 0;
    }
    return n;
  };

  beforeAll(async () => {
    kafka = log === 'kafka' ? await startKafka() : null;
    const env = { ENTITY_TYPES: process.env.ENTITY_TYPES!, ...(kafka ? kafkaEnv(kafka) : {}) };
    t = await startTestApp(env);
    replica = await startTestApp(env, { sharing: t });
    user = await t.token(5);
    const asValue = (message: Message | string) => (typeof message === 'string' ? message : JSON.stringify(message));
    if (kafka) {
      const client = new Kafka({ brokers: kafka.brokers, logLevel: logLevel.NOTHING });
      const producer: Producer = client.producer({ allowAutoTopicCreation: true });
      await producer.connect();
      const topic = t.app.config.kafka.entityTopic;
      send = async (messages) => {
        // Keyed by the entity, as docs/adopting.md asks: one entity's messages stay in one partition, in order.
        await producer.send({
          topic,
          messages: messages.map((m) => ({ key: typeof m === 'string' ? 'junk' : `${m.type}:${m.id}`, value: asValue(m) })),
        });
      };
      close = () => producer.disconnect();
    } else {
      const redis = new Redis(TEST_REDIS_URL);
      const stream = `${t.app.config.redisKeyPrefix}entity-lifecycle`;
      send = async (messages) => {
        for (const m of messages) await redis.xadd(stream, '*', LIFECYCLE_FIELD, asValue(m));
      };
      close = async () => {
        redis.disconnect();
      };
    }
  }, 60_000);
  afterAll(async () => {
    await close?.();
    await replica?.stop();
    await t?.stop();
    await kafka?.stop();
  }, 30_000);

  it('registers what the service announces, on every replica', async () => {
    await send([register('c-1'), register('c-2')]);
    // The consumer group may take seconds to form on Kafka: wait for the first registration.
    expect(
      await waitFor(
        () => like(t, 'c-1'),
        (outcome) => outcome === 'liked',
        { what: 'c-1 registered', timeoutMs: 45_000 },
      ),
    ).toBe('liked');
    // Order holds per entity, not across them: c-2 may be applied in a later batch than c-1,
    // and on Kafka its partition may move while the second replica joins the group (a rebalance).
    expect(
      await waitFor(
        () => like(replica, 'c-2'),
        (outcome) => outcome === 'liked',
        { what: 'c-2 registered', timeoutMs: 45_000 },
      ),
    ).toBe('liked');
    const read = await waitFor(
      () => replica.gql(READ, { ids: ['c-1', 'c-2'] }, { token: user }),
      (res) => res.data?.entities.every((e: { counts: { likes: number } } | null) => e?.counts.likes === 1),
      { what: 'both likes counted' },
    );
    expect(read.data.entities).toEqual([
      { id: 'c-1', counts: { likes: 1 } },
      { id: 'c-2', counts: { likes: 1 } },
    ]);
    expect(await counted('register', 'applied')).toBe(2);
  }, 100_000);

  it('skips a message it cannot apply, and applies the ones behind it', async () => {
    await send([
      'not json',
      { ...register('c-bad'), v: 2 },
      { ...register('c-bad'), type: 'photo' },
      { ...register('c-bad'), version: '0' },
      register('c-bad', '1', 'someone'),
      { ...register('c-bad'), op: 'update' },
      register('c-3'),
    ]);
    expect(
      await waitFor(
        () => like(t, 'c-3'),
        (outcome) => outcome === 'liked',
        { what: 'c-3 registered' },
      ),
    ).toBe('liked');
    expect(
      await waitFor(
        () => counted('unknown', 'rejected'),
        (n) => n === 6,
        { what: 'the rejections counted' },
      ),
    ).toBe(6);
    expect(await like(t, 'c-bad')).toBe('NOT_FOUND');
  });

  it('applies by version: a retry or a late message changes nothing, and deletion is final', async () => {
    const unchanged = await counted('register', 'unchanged');
    // The deletion of c-4 arrives before its registration (another partition, or a slow producer).
    await send([remove('c-4', '2'), register('c-4', '1'), register('c-1', '1')]);
    await waitFor(
      () => counted('register', 'unchanged'),
      (n) => n === unchanged + 2,
      { what: 'the late messages read' },
    );
    expect(await like(t, 'c-4')).toBe('NOT_FOUND');
    expect(await like(t, 'c-1')).toBe('liked'); // still there: a retry of its registration changed nothing
  });

  it('deletes on every replica within a second of the message', async () => {
    // Both processes hold c-2 in their caches (liked through each).
    expect(await like(t, 'c-2')).toBe('liked');
    expect(await like(replica, 'c-2')).toBe('liked');
    const deletions = await counted('delete', 'applied');
    const sent = Date.now();
    await send([remove('c-2')]);
    const refusedBy = async (app: TestApp) => {
      await waitFor(
        () => like(app, 'c-2'),
        (outcome) => outcome === 'NOT_FOUND',
        { what: 'the deletion heard', timeoutMs: 5000 },
      );
      return Date.now() - sent;
    };
    const [onFirst, onReplica] = await Promise.all([refusedBy(t), refusedBy(replica)]);
    console.log(`entity lifecycle (${log}): a deletion refused on the replicas ${onFirst} ms and ${onReplica} ms after its message`);
    expect(Math.max(onFirst, onReplica)).toBeLessThan(1000);
    for (const app of [t, replica]) {
      const read = await app.gql(READ, { ids: ['c-2', 'c-1'] }, { token: user });
      expect(read.data.entities).toEqual([null, { id: 'c-1', counts: { likes: 1 } }]);
    }
    expect(await counted('delete', 'applied')).toBe(deletions + 1);
  });
});
