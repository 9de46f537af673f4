// Memory per client is bounded by bytes: a production API process (each executor, its heap
// capped as a small container's would be) is sent thousands of distinct documents, each as
// large as the limits allow: comments that count against no token limit, and 40-alias feed
// documents, each sent twice so graphql-jit compiles it. Before the caches were bounded by the
// heap they hold, this killed the process ("JavaScript heap out of memory") or raised its RSS
// by gigabytes; now its RSS levels off.
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { type Spawned, startTallyProcess } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';

const SECRET = 'document-memory-secret-0123456789abcdef';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();
const processes: Spawned[] = [];

afterAll(async () => {
  for (const proc of processes) proc.child.kill('SIGTERM');
  await Promise.all(processes.map((p) => p.exited));
});

const MiB = 1024 * 1024;
/** What the test lets the caches hold: small, so thousands of documents overflow them many times. */
const CACHES = { DOCUMENT_CACHE_BYTES: String(8 * MiB), COMPILED_CACHE_BYTES: String(16 * MiB) };
/** The child's heap cap, as a small container's: unbounded caches ran out of it. */
const HEAP_CAP_MiB = 256;
/**
 * RSS the process may gain over its start, once every document was sent: measured 150-245
 * MiB for caches of 24 MiB (the rest is heap headroom up to the cap and freed request buffers
 * malloc keeps), against a crash before.
 */
const RSS_GROWTH_BOUND = 320 * MiB;
/**
 * RSS growth allowed between the first round and the last. A round sends ~88 MiB of comment
 * documents and compiles ~65 MiB of feed documents, so caches that kept them would add ~300
 * MiB over the two later rounds; bounded ones add only the heap's lazy growth toward its cap
 * (measured 9-42 MiB, the most on a loaded CI machine).
 */
const LEVELS_OFF_BOUND = 96 * MiB;

const rssOf = (pid: number) => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** A document of ~30 KB that is one comment around `{ __typename }`. */
const commentDocument = (i: number) => `#${'x'.repeat(30 * 1024)}\n{ __typename } # ${i}`;

/** 40 aliases of a whole feed page: ~8.5 KB of source, ~0.65 MB once compiled. */
function aliasDocument(i: number) {
  const page =
    'edges { cursor node { id title body createdAt author { id name counts { followers followings } } counts { likes favs asOf } myState { liked faved } } } pageInfo { hasNextPage endCursor }';
  const aliases = Array.from({ length: 40 }, (_, a) => `a${a}: feed(first: $n) { ${page} }`).join(' ');
  return `query Q${i}($n: Int) { ${aliases} }`;
}

async function post(url: string, token: string, query: string, variables?: object) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ query, variables }),
  });
  return { status: res.status, body: (await res.json()) as { errors?: { extensions?: { code?: string } }[] } };
}

/** Sends `count` documents from `make`, `parallel` at a time, each `times` times; every one must succeed. */
async function send(url: string, token: string, make: (i: number) => string, from: number, count: number, times = 1, variables?: object) {
  const parallel = 8;
  for (let start = from; start < from + count; start += parallel) {
    await Promise.all(
      Array.from({ length: Math.min(parallel, from + count - start) }, async (_, k) => {
        for (let n = 0; n < times; n++) {
          const { status, body } = await post(url, token, make(start + k), variables);
          expect(status, JSON.stringify(body.errors)).toBe(200);
        }
      }),
    );
  }
}

describe.each(['jit', 'graphql-js'])('an API process on %s, sent thousands of distinct large documents', (executor) => {
  it('keeps its RSS under a bound that does not grow with the documents', async () => {
    const { proc, url } = await startTallyProcess('api', {
      ...stores.env(),
      JWT_SECRET: SECRET,
      GRAPHQL_EXECUTOR: executor,
      ...CACHES,
      NODE_OPTIONS: `--max-old-space-size=${HEAP_CAP_MiB}`,
    });
    processes.push(proc);
    const pid = proc.child.pid!;
    const token = await auth.sign(1);
    await post(url, token, 'mutation { createPost(input: { title: "t", body: "b" }) { id } }');
    const started = rssOf(pid);

    const rounds: number[] = [];
    for (let round = 0; round < 3; round++) {
      await send(url, token, commentDocument, round * 3000, 3000);
      await send(url, token, aliasDocument, round * 100, 100, 2, { n: 1 });
      rounds.push(rssOf(pid));
    }
    const mb = (bytes: number) => Math.round(bytes / MiB);
    console.log(`documentMemory (${executor}): RSS at start ${mb(started)} MiB, after each round ${rounds.map(mb).join(', ')} MiB`);
    expect(proc.child.exitCode).toBeNull();
    // The caches' own estimate of what they hold stays within their settings.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    const cached = (cache: string) =>
      Number(new RegExp(`tally_graphql_document_cache_bytes\\{cache="${cache}"\\} (\\d+)`).exec(metrics)![1]);
    expect(cached('parsed')).toBeGreaterThan(0);
    expect(cached('parsed')).toBeLessThanOrEqual(Number(CACHES.DOCUMENT_CACHE_BYTES));
    expect(cached('compiled')).toBeLessThanOrEqual(Number(CACHES.COMPILED_CACHE_BYTES));
    if (executor === 'jit') expect(cached('compiled')).toBeGreaterThan(Number(CACHES.COMPILED_CACHE_BYTES) / 2);
    expect(rounds.at(-1)! - started).toBeLessThan(RSS_GROWTH_BOUND);
    expect(rounds.at(-1)! - rounds[0]!).toBeLessThan(LEVELS_OFF_BOUND);
  }, 240_000);
});
