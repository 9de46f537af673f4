import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../support/app.js';
import { kafkaEnv, startKafka, type TestKafka } from '../support/kafka.js';
import { runLikeStorm } from '../support/storm.js';
import { waitFor } from '../support/wait.js';

// The likes storm again, with EVENT_LOG=kafka: outbox -> relay -> Kafka -> aggregator.
let kafka: TestKafka;
let t: TestApp;

beforeAll(async () => {
  kafka = await startKafka();
  console.log(`likes over Kafka: running against ${kafka.label}`);
  t = await startTestApp(kafkaEnv(kafka));
  // Consumer groups take a few seconds to form: wait until a first like is counted.
  const [probe] = await t.createPosts(1);
  await t.gql(
    'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }',
    { id: probe },
    { token: await t.token(2) },
  );
  await waitFor(
    () => t.gql('query($id: ID!) { post(id: $id) { counts { likes } } }', { id: probe }),
    (r) => r.data.post.counts.likes === 1,
    {
      what: 'the Kafka consumers to join',
      timeoutMs: 45_000,
    },
  );
}, 60_000);
afterAll(async () => {
  await t?.stop();
  await kafka?.stop();
}, 30_000);

describe(`setLikeRelation under a storm with EVENT_LOG=kafka`, () => {
  it.each(['LIKE', 'FAV'] as const)('counts %s exactly: 300 like (100 twice), 50 unlike', (kind) => runLikeStorm(t, kind), 60_000);
  it('counts a reaction exactly: 300 react (100 twice), 50 take it back', () => runLikeStorm(t, { reaction: 'HOORAY' }, 20_000), 60_000);

  it('persists the facts to PostgreSQL from Kafka as well', async () => {
    const facts = await waitFor(
      () => t.app.db.relationFact.count({ where: { active: true } }),
      (n) => n === 751,
      {
        what: 'the persister',
        timeoutMs: 20_000,
      },
    );
    expect(facts).toBe(751); // three storms of 250, and the first like
  });
});
