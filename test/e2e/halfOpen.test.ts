// A half-open Redis connection, as deployed: an API process and a worker reach Redis through
// a TCP proxy that stops forwarding on the connections open at that moment without closing
// them (new connections work). Before, nothing answered for good: /readyz hung, no process
// opened a new connection, and requests answered 503 were applied a minute or two later,
// after the connections were reset by hand. Now every call has a deadline, a dead connection
// is replaced without a person, and a change whose outcome was not known is never applied
// behind its client's back.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { startApiAndWorker } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { waitFor } from '../support/wait.js';

const SECRET = 'half-open-secret-0123456789abcdef012345';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();
let deployment: Awaited<ReturnType<typeof startApiAndWorker>> | undefined;
const redis = new URL(TEST_REDIS_URL);
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let api: string;

const COMMAND_TIMEOUT_MS = 1500;
const READINESS_TIMEOUT_MS = 1000;

beforeAll(async () => {
  proxy = await startTcpProxy({ host: redis.hostname, port: Number(redis.port || 6379) });
  const env = {
    ...stores.env(),
    REDIS_URL: `redis://127.0.0.1:${proxy.port}`,
    JWT_SECRET: SECRET,
    REDIS_COMMAND_TIMEOUT_MS: String(COMMAND_TIMEOUT_MS),
    READINESS_TIMEOUT_MS: String(READINESS_TIMEOUT_MS),
  };
  // The proxy's cut drops the stalled connections too.
  deployment = await startApiAndWorker(env, () => proxy.cut());
  api = deployment.api;
}, 60_000);
afterAll(() => deployment?.stop());

async function like(userId: number, postId: string, active: boolean, idempotencyKey?: string) {
  const res = await fetch(`${api}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${await auth.sign(userId)}` },
    body: JSON.stringify({
      query: 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed post { myState { liked } } } }',
      variables: { i: { postId, active, idempotencyKey } },
    }),
  });
  return { status: res.status, ...((await res.json()) as { data?: any; errors?: { message: string; extensions?: any }[] }) };
}

/** /readyz's status and how long it took to answer. */
async function readiness() {
  const started = Date.now();
  const res = await fetch(`${api}/readyz`);
  return { status: res.status, ms: Date.now() - started };
}

const timed = async <T>(work: Promise<T>) => {
  const started = Date.now();
  const value = await work;
  return { value, ms: Date.now() - started };
};

describe('a half-open Redis connection', () => {
  it('answers within its deadlines, replaces the dead connections by itself, and applies no change late', async () => {
    const author = await auth.sign(1);
    const created = await fetch(`${api}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${author}` },
      body: JSON.stringify({ query: 'mutation { createPost(input: { title: "t", body: "b" }) { id } }' }),
    });
    const postId = ((await created.json()) as any).data.createPost.id as string;
    expect((await like(2, postId, true)).data.setLikeRelation.changed).toBe(true);
    expect((await readiness()).status).toBe(200);

    proxy.stall();
    // Every connection open now is half-open. A like with a key, one without, and /readyz all
    // answer within their deadlines.
    const [keyed, unkeyed, ready] = await Promise.all([timed(like(3, postId, true, 'tap-3')), timed(like(4, postId, true)), readiness()]);
    expect(ready.ms).toBeLessThan(READINESS_TIMEOUT_MS + 1000);
    for (const { value, ms } of [keyed, unkeyed]) {
      expect(ms).toBeLessThan(COMMAND_TIMEOUT_MS + 3000);
      // Either it went through on a connection opened anew, or it says its outcome is unknown.
      if (value.errors) expect(value.errors[0]!.extensions).toMatchObject({ code: 'INTERNAL_SERVER_ERROR', retryable: true });
    }

    // No one resets anything: the processes open new connections and are ready again.
    await waitFor(
      async () => (await readiness()).status,
      (status) => status === 200,
      { what: 'ready again without a person', timeoutMs: 20_000, intervalMs: 250 },
    );
    // The retry with the same key answers what happened: the like is there exactly once.
    const retried = await like(3, postId, true, 'tap-3');
    expect(retried.errors).toBeUndefined();
    expect(retried.data.setLikeRelation.post.myState.liked).toBe(true);
    // User 4 changes their mind after the unknown answer; a late copy of their like must not
    // undo that.
    expect((await like(4, postId, false)).errors).toBeUndefined();
    await new Promise((r) => setTimeout(r, 2 * COMMAND_TIMEOUT_MS));
    const states = await Promise.all([2, 3, 4].map(async (u) => (await like(u, postId, u !== 4)).data.setLikeRelation));
    expect(states.map((s) => [s.changed, s.post.myState.liked])).toEqual([
      [false, true],
      [false, true],
      [false, false],
    ]);
    // And the counts converge on the truth: users 2 and 3.
    await waitFor(
      async () => {
        const res = await fetch(`${api}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: 'query($id: ID!) { post(id: $id) { counts { likes } } }', variables: { id: postId } }),
        });
        return ((await res.json()) as any).data?.post?.counts.likes;
      },
      (likes) => likes === 2,
      { what: 'the count of 2 likes', timeoutMs: 20_000, intervalMs: 250 },
    );
  }, 90_000);
});
