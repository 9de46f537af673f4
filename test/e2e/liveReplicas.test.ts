// Live counts across a split deployment, as deployed: two API processes and one worker, each
// its own node process. The worker's flush publishes once per pass; each API process hears
// the partitions its own sockets watch, so a socket on either sees the same pushes.
import { afterAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { connectLive, type LiveClient, onServer } from '../support/liveClient.js';
import { type Spawned, startTallyProcess } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';
import { waitFor } from '../support/wait.js';

const SECRET = 'live-replicas-secret-0123456789abcdef';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();
const processes: Spawned[] = [];
const clients: LiveClient[] = [];

afterAll(async () => {
  await Promise.all(clients.map((c) => c.dispose().catch(() => {})));
  for (const proc of processes) proc.child.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited));
});

async function start(role: 'api' | 'worker'): Promise<string> {
  const { proc, url } = await startTallyProcess(role, { ...stores.env(), JWT_SECRET: SECRET });
  processes.push(proc);
  return url;
}

async function gql(url: string, query: string, token: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query }),
  });
  return (await res.json()) as any;
}

describe('live counts with two API processes and a worker', () => {
  it('a socket on each API process sees the same pushes, ending on the exact count', async () => {
    const [apiA, apiB] = [await start('api'), await start('api')];
    await start('worker');
    const postId = (await gql(apiA, 'mutation { createPost(input: { title: "t", body: "b" }) { id } }', await auth.sign(1))).data.createPost
      .id;
    const watch = (url: string) => {
      const client = connectLive(url);
      clients.push(client);
      return client.subscribe(`subscription { postCountsChanged(postIds: ["${postId}"]) { id counts { likes asOf } } }`);
    };
    const onA = await onServer(apiA, 1, () => watch(apiA));
    const onB = await onServer(apiB, 1, () => watch(apiB));
    const last = (s: typeof onA) => s.received.at(-1)?.data?.postCountsChanged.counts;

    for (let round = 0; round < 4; round++) {
      // Likes go to both API processes; the worker counts them all.
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const user = 100 + round * 20 + i;
          const url = i % 2 === 0 ? apiA : apiB;
          const res = await gql(
            url,
            `mutation { setLikeRelation(input: { postId: "${postId}", active: true }) { changed } }`,
            await auth.sign(user),
          );
          expect(res.data.setLikeRelation.changed).toBe(true);
        }),
      );
      // A flush pass between rounds: both sockets hear this round before the next begins.
      for (const socket of [onA, onB]) {
        await waitFor(
          async () => last(socket)?.likes,
          (n) => n === 20 * (round + 1),
          { what: `round ${round} on both processes`, timeoutMs: 10_000 },
        );
      }
    }
    for (const socket of [onA, onB]) {
      await waitFor(
        async () => last(socket)?.likes,
        (n) => n === 80,
        { what: 'the final count on both processes', timeoutMs: 10_000 },
      );
    }
    // The same pushes, pass for pass: equal counts at equal asOf on both processes.
    const seen = (s: typeof onA) =>
      s.received.map((r) => `${r.data.postCountsChanged.counts.likes}@${r.data.postCountsChanged.counts.asOf}`);
    expect(seen(onA)).toEqual(seen(onB));
    expect(seen(onA).length).toBeGreaterThanOrEqual(2);
    // Three processes start through tsx: on a loaded 2-core machine that alone can take 30 s.
  }, 90_000);
});
