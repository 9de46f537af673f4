// A half-open PostgreSQL connection, as deployed: an API process and a worker reach
// PostgreSQL through a TCP proxy that stops forwarding on the connections open at that moment
// without closing them (new connections work). Before, the fact persister stalled until the
// connections were reset by hand (a query that timed out left its pooled connection waiting
// for good), and likes waited for PostgreSQL though their fact, event and answer live in
// Redis. Now likes on known posts keep answering, /readyz says not ready within its
// deadline, and the dead connections are replaced without a person: every fact reaches
// PostgreSQL and every count is exact.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { startApiAndWorker } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';
import { startTcpProxy } from '../support/tcpProxy.js';
import { waitFor } from '../support/wait.js';

const SECRET = 'half-open-pg-secret-0123456789abcdef0123';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();
let deployment: Awaited<ReturnType<typeof startApiAndWorker>> | undefined;
let proxy: Awaited<ReturnType<typeof startTcpProxy>>;
let api: string;

const QUERY_TIMEOUT_MS = 2000;
const READINESS_TIMEOUT_MS = 1000;

beforeAll(async () => {
  const direct = new URL(stores.db.url);
  proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
  const viaProxy = new URL(stores.db.url);
  viaProxy.host = `127.0.0.1:${proxy.port}`;
  const env = {
    ...stores.env(),
    DATABASE_URL: viaProxy.toString(),
    JWT_SECRET: SECRET,
    DATABASE_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    DATABASE_CONNECT_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
    READINESS_TIMEOUT_MS: String(READINESS_TIMEOUT_MS),
  };
  // The proxy's cut drops the stalled connections too.
  deployment = await startApiAndWorker(env, () => proxy.cut());
  api = deployment.api;
}, 60_000);
afterAll(() => deployment?.stop());

async function gql(query: string, variables: Record<string, unknown>, userId?: number) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (userId !== undefined) headers.authorization = `Bearer ${await auth.sign(userId)}`;
  const res = await fetch(`${api}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: res.status, ...((await res.json()) as { data?: any; errors?: unknown[] }) };
}
const LIKE = 'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed } }';

/** Active likes of the post in PostgreSQL, read directly (not through the proxy). */
async function persistedLikers(postId: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: stores.db.url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "SELECT user_id FROM relation_facts WHERE entity_type = 'post' AND entity_id = $1 AND kind = 'like' AND active ORDER BY user_id",
      [postId],
    );
    return rows.map((r) => Number(r.user_id));
  } finally {
    await client.end();
  }
}

describe('a half-open PostgreSQL connection', () => {
  it('keeps likes answering, says not ready in time, and replaces the dead connections by itself', async () => {
    const postId = (await gql('mutation { createPost(input: { title: "t", body: "b" }) { id } }', {}, 1)).data.createPost.id as string;
    for (const user of [2, 3]) expect((await gql(LIKE, { id: postId }, user)).data.setLikeRelation.changed).toBe(true);
    for (const user of [4, 5]) expect((await gql('{ viewer { id } }', {}, user)).data.viewer.id).toBe(String(user)); // known users
    await waitFor(
      () => persistedLikers(postId),
      (ids) => ids.length === 2,
      { what: 'the first likes persisted' },
    );

    proxy.stall();
    // Likes by known users on a known post answer from Redis, at once.
    for (const user of [4, 5]) {
      const started = Date.now();
      const res = await gql(LIKE, { id: postId }, user);
      expect(res.errors).toBeUndefined();
      expect(res.data.setLikeRelation.changed).toBe(true);
      expect(Date.now() - started).toBeLessThan(1000);
    }
    const started = Date.now();
    const ready = await fetch(`${api}/readyz`);
    expect(Date.now() - started).toBeLessThan(READINESS_TIMEOUT_MS + 1000);
    expect(ready.status).toBe(503);

    // No one resets anything: the stalled connections time out, leave the pools, and new ones
    // carry the persister's writes and /readyz.
    await waitFor(
      async () => (await fetch(`${api}/readyz`)).status,
      (status) => status === 200,
      { what: 'ready again without a person', timeoutMs: 20_000, intervalMs: 250 },
    );
    expect(
      await waitFor(
        () => persistedLikers(postId),
        (ids) => ids.length === 4,
        { what: 'every like persisted', timeoutMs: 30_000 },
      ),
    ).toEqual([2, 3, 4, 5]);
    await waitFor(
      async () => (await gql('query($id: ID!) { post(id: $id) { counts { likes } } }', { id: postId })).data?.post?.counts.likes,
      (likes) => likes === 4,
      { what: 'the count of 4', timeoutMs: 10_000 },
    );
  }, 90_000);
});
