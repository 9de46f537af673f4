// Redis loses its data with EVENT_LOG=kafka: events already relayed to Kafka outlive it, but
// the fact persister has not written them to PostgreSQL yet. A write must not be decided
// before they are there, and recovery must not declare Redis whole without them.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { spawnTsx } from '../support/process.js';
import { type RedisServer, startRedisServer } from '../support/redisServer.js';
import { waitFor, waitUntil } from '../support/wait.js';

let kafka: TestKafka;
let server: RedisServer;
let env: Record<string, string>;
let api: TestApp;
let worker: TestApp | null = null;
let admin: Redis;

beforeAll(async () => {
  kafka = await startKafka();
  console.log(`recovery over Kafka: running against ${kafka.label}`);
  server = await startRedisServer();
  admin = new Redis(server.url);
  env = { ...kafkaEnv(kafka), KAFKA_CREATE_TOPIC: 'true', KAFKA_TOPIC_PARTITIONS: '4', REDIS_URL: server.url, PARTITIONS: '4' };
  api = await startTestApp({ ...env, ROLE: 'api' }); // no worker yet: nothing relayed or persisted
}, 60_000);
afterAll(async () => {
  await worker?.stop();
  await api?.stop();
  admin?.disconnect();
  await server?.stop();
  await kafka?.stop();
}, 30_000);

const SET = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';
const READ = 'query($id: ID!) { post(id: $id) { counts { likes asOf } myState { liked } } }';

describe('a Redis data loss with EVENT_LOG=kafka', () => {
  it('waits for the events in Kafka to reach PostgreSQL before deciding a write, then recovers by itself', async () => {
    const [postId] = await api.createPosts(1);
    const tokens = await Promise.all([31, 32, 33].map((u) => api.token(u)));
    for (const token of tokens) await api.gql(SET, { i: { postId, active: true } }, { token });

    // A relay sends the outbox to Kafka (then dies before acknowledging): the likes are in
    // Kafka, and nowhere else once Redis loses its data.
    const relay = spawnTsx('test/fixtures/dyingRelay.ts', [], {
      ...env,
      REDIS_KEY_PREFIX: api.app.config.redisKeyPrefix,
      DATABASE_URL: api.db.url,
      NODE_ENV: 'test',
    });
    await relay.waitFor(/sent 3/, 30_000);
    relay.child.kill('SIGKILL');
    await relay.exited;
    await admin.flushall();
    expect(await api.app.db.relationFact.count()).toBe(0);

    // User 31 unlikes. Tally may answer only once it knows the like from Kafka: the answer is
    // "try again" until a worker has persisted Kafka's events and restored the post, then
    // `changed: true` — never `changed: false` decided against the empty Redis.
    const answers: string[] = [];
    const unlike = (async () => {
      for (;;) {
        const res = await api.gql(SET, { i: { postId, active: false } }, { token: tokens[0] });
        const code = res.errors?.[0]?.extensions?.code;
        if (!code) return res.data.setLikeRelation.changed as boolean;
        answers.push(`${code}:${res.errors![0]!.extensions!.retryAfterMs}`);
        expect(code).toBe('INTERNAL_SERVER_ERROR');
        await new Promise((r) => setTimeout(r, res.errors![0]!.extensions!.retryAfterMs as number));
      }
    })();
    // The worker starts once the API has refused at least once without it.
    await waitUntil(async () => answers.length > 0, { what: 'a refusal before any worker runs' });
    worker = await startTestApp({ ...env, ROLE: 'worker' }, { sharing: api });
    expect(await unlike).toBe(true);
    expect(answers.every((a) => a === 'INTERNAL_SERVER_ERROR:1000')).toBe(true);

    // The worker recovers the rest; counts, viewer state and PostgreSQL agree.
    const since = Date.now();
    const read = await waitFor(
      () => api.gql(READ, { id: postId }, { token: tokens[1] }),
      (r) => r.data.post.counts.asOf !== null && Date.parse(r.data.post.counts.asOf) > since,
      { what: 'counts from Redis again', timeoutMs: 45_000 },
    );
    expect(read.data.post).toMatchObject({ counts: { likes: 2 }, myState: { liked: true } });
    expect((await api.gql(READ, { id: postId }, { token: tokens[0] })).data.post.myState.liked).toBe(false);
    for (let p = 0; p < 4; p++) expect(await admin.exists(api.app.keys.ready(p))).toBe(1);
    const active = await waitFor(
      () => api.app.db.relationFact.findMany({ where: { entityId: Number(postId), active: true }, select: { userId: true } }),
      (rows) => rows.length === 2,
      { what: 'PostgreSQL to hold the unlike', timeoutMs: 20_000 },
    );
    expect(active.map((r) => Number(r.userId)).sort()).toEqual([32, 33]);
  }, 120_000);
});
