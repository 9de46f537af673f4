// What a client may see, across replicas, as deployed: two API processes in production (A on
// graphql-jit, B on graphql-js) and a worker, each its own node process. A change made through
// A is checked through B, over HTTP and in B's live pushes, within a second: a deleted post, an
// erased user, likes turned private. B re-reads the erasure list only every 10 minutes here,
// and keeps a looked-up post for 30 s (the default): only the announcements can make it in time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { connectLive, type LiveClient, onServer } from '../support/liveClient.js';
import { type Spawned, startTallyProcess } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';
import { waitFor } from '../support/wait.js';

const SECRET = 'replicas-secret-0123456789abcdef012345';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();
const processes: Spawned[] = [];
const clients: LiveClient[] = [];
/** In force within this long on the other replica. */
const IN_FORCE_MS = 1000;

let apiA: string;
let apiB: string;

beforeAll(async () => {
  const env = { ...stores.env(), JWT_SECRET: SECRET, ERASURE_REFRESH_MS: '600000', JIT_COMPILE_AFTER: '1', RATE_LIMIT_WRITES: '100000' };
  const started = await Promise.all([
    startTallyProcess('api', { ...env, GRAPHQL_EXECUTOR: 'jit' }),
    startTallyProcess('api', { ...env, GRAPHQL_EXECUTOR: 'graphql-js' }),
    startTallyProcess('worker', env),
  ]);
  processes.push(...started.map((s) => s.proc));
  [apiA, apiB] = [started[0]!.url, started[1]!.url];
}, 60_000);
afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose().catch(() => {})));
  for (const proc of processes) proc.child.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited));
});

async function gql(url: string, query: string, variables: Record<string, unknown> = {}, userId?: number) {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (userId !== undefined) headers.authorization = `Bearer ${await auth.sign(userId, { name: `user ${userId}` })}`;
  const res = await fetch(`${url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
  return { status: res.status, ...((await res.json()) as { data?: any; errors?: { message: string; extensions?: any }[] }) };
}
const codes = (res: { errors?: { extensions?: any }[] }) => (res.errors ?? []).map((e) => e.extensions?.code);

const CREATE = 'mutation($t: String!) { createPost(input: { title: $t, body: "secret body" }) { id } }';
const LIKE = 'mutation($id: ID!) { setLikeRelation(input: { postId: $id, active: true }) { changed post { title body } } }';
const POST = 'query($id: ID!) { post(id: $id) { id title body } }';
const POST_PUSHES = 'subscription($ids: [ID!]!) { postCountsChanged(postIds: $ids) { id title body author { name } counts { likes } } }';

/** An anonymous socket's subscription, once the server holds it. */
function watch(url: string, query: string, variables: Record<string, unknown>) {
  const client = connectLive(url);
  clients.push(client);
  return onServer(url, 1, () => client.subscribe(query, variables));
}

/** Waits until `check` passes through replica B, at most IN_FORCE_MS after `since`. */
async function inForceOnB(since: number, what: string, check: () => Promise<boolean>) {
  await waitFor(check, (ok) => ok, { what, timeoutMs: Math.max(50, since + IN_FORCE_MS - Date.now()), intervalMs: 20 });
}

describe('two API replicas and a worker', () => {
  it('a post deleted through A is gone on B within a second: reads, likes and pushes', async () => {
    const [p, q] = await Promise.all([1, 2].map(async (i) => (await gql(apiA, CREATE, { t: `post ${i}` }, 10)).data.createPost.id));
    // B has looked the post up (its post cache holds it for 30 s) and pushes it to a socket.
    expect((await gql(apiB, LIKE, { id: p }, 11)).data.setLikeRelation.changed).toBe(true);
    const pushes = await watch(apiB, POST_PUSHES, { ids: [p, q] });
    expect((await gql(apiB, LIKE, { id: p }, 12)).data.setLikeRelation.changed).toBe(true); // a push of p due

    const deleted = await gql(apiA, 'mutation($id: ID!) { deletePost(id: $id) { id } }', { id: p }, 10);
    expect(deleted.errors).toBeUndefined();
    const at = Date.now();
    await inForceOnB(at, 'the deleted post gone on B', async () => (await gql(apiB, POST, { id: p })).data?.post === null);
    // From here B holds the deletion: a push of p it resolved before it heard may still arrive
    // before this point (the flush's publish and A's announcement race), none after.
    const pushesBefore = pushes.received.length;
    const like = await gql(apiB, LIKE, { id: p }, 13);
    expect(codes(like)).toEqual(['NOT_FOUND']);
    expect(JSON.stringify(like)).not.toContain('secret body');

    // A later flush pass pushes q; no push of p, nor any error, came after the deletion.
    await gql(apiA, LIKE, { id: q }, 14);
    await waitFor(
      async () => pushes.received.slice(pushesBefore).some((r) => r.data?.postCountsChanged?.id === q),
      (ok) => ok,
      { what: "q's push on B", timeoutMs: 10_000 },
    );
    const after = pushes.received.slice(pushesBefore);
    expect(after.filter((r) => r.data?.postCountsChanged?.id === p)).toEqual([]);
    expect(after.flatMap((r) => r.errors ?? [])).toEqual([]);
  });

  it("a user erased through A is gone on B within a second, even after B's last live subscription ended", async () => {
    const ERASED = 30;
    const postId = (await gql(apiA, CREATE, { t: 'by the erased user' }, ERASED)).data.createPost.id;
    expect((await gql(apiB, LIKE, { id: postId }, 31)).errors).toBeUndefined();
    // B's last live subscription ends (its SUNSUBSCRIBE answers 0): announcements must still arrive.
    const passing = await watch(apiB, POST_PUSHES, { ids: [postId] });
    await onServer(apiB, -1, () => passing.stop());
    // Then sockets on B watch the user and their post, with the author's name.
    const userPushes = await watch(
      apiB,
      'subscription($ids: [ID!]!) { userCountsChanged(userIds: $ids) { id name counts { posts followers } } }',
      {
        ids: [String(ERASED)],
      },
    );
    const postPushes = await watch(apiB, POST_PUSHES, { ids: [postId] });

    const ERASE = 'mutation($c: String!) { eraseAccount(input: { confirm: $c }) { state } }';
    const erased = await gql(apiA, ERASE, { c: String(ERASED) }, ERASED);
    expect(erased.data.eraseAccount.state).toMatch(/ERASING|DONE/);
    const at = Date.now();
    const [userBefore, postBefore] = [userPushes.received.length, postPushes.received.length];
    await inForceOnB(at, "the erased user's token refused on B", async () => {
      const res = await gql(apiB, '{ viewer { id } }', {}, ERASED);
      return res.status === 401 && codes(res)[0] === 'UNAUTHENTICATED';
    });
    expect((await gql(apiB, 'query($id: ID!) { user(id: $id) { id name } }', { id: String(ERASED) })).data.user).toBeNull();
    expect((await gql(apiB, POST, { id: postId })).data.post).toBeNull();
    expect(codes(await gql(apiB, LIKE, { id: postId }, 32))).toEqual(['NOT_FOUND']);
    expect(
      codes(
        await gql(
          apiB,
          'mutation($id: ID!) { setFollowRelation(input: { userId: $id, active: true }) { changed } }',
          { id: String(ERASED) },
          32,
        ),
      ),
    ).toEqual(['NOT_FOUND']);

    // The erasure undoes the user's facts and deletes their post (counts move, flush passes
    // push them); once it is DONE, a later pass pushes another post: nothing of the erased
    // user came to B's sockets after the erasure began.
    await waitFor(
      async () => (await gql(apiA, ERASE, { c: String(ERASED) }, ERASED)).data?.eraseAccount.state,
      (state) => state === 'DONE',
      { what: 'the erasure done', timeoutMs: 30_000, intervalMs: 200 },
    );
    const other = (await gql(apiA, CREATE, { t: 'someone else' }, 33)).data.createPost.id;
    const marker = await watch(apiB, POST_PUSHES, { ids: [other] });
    await gql(apiA, LIKE, { id: other }, 34);
    await waitFor(
      async () => marker.received.length,
      (n) => n > 0,
      { what: "another post's push on B", timeoutMs: 10_000 },
    );
    const leaked = [...userPushes.received.slice(userBefore), ...postPushes.received.slice(postBefore)];
    expect(leaked).toEqual([]);
  });

  it('likes turned private through A are hidden on B at once', async () => {
    const OWNER = 40;
    const postId = (await gql(apiA, CREATE, { t: 'liked in public' }, 41)).data.createPost.id;
    await gql(apiA, 'mutation { updateProfile(input: { likesPublic: true }) { id } }', {}, OWNER);
    await gql(apiA, LIKE, { id: postId }, OWNER);
    const likers = 'query($id: ID!) { post(id: $id) { likers { edges { node { id } } } } }';
    const liked = 'query($id: ID!) { user(id: $id) { likedPosts { edges { node { id } } } } }';
    await waitFor(
      async () => (await gql(apiB, likers, { id: postId })).data.post.likers.edges.map((e: any) => e.node.id),
      (ids) => ids.includes(String(OWNER)),
      { what: 'the like listed on B', timeoutMs: 10_000 },
    );
    expect((await gql(apiB, liked, { id: String(OWNER) })).data.user.likedPosts.edges).toHaveLength(1);

    await gql(apiA, 'mutation { updateProfile(input: { likesPublic: false }) { id } }', {}, OWNER);
    expect((await gql(apiB, likers, { id: postId })).data.post.likers.edges).toEqual([]);
    expect(codes(await gql(apiB, liked, { id: String(OWNER) }))).toEqual(['FORBIDDEN']);
    // The owner still sees their own.
    expect((await gql(apiB, liked, { id: String(OWNER) }, OWNER)).data.user.likedPosts.edges).toHaveLength(1);
  });
});
