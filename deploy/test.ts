// `npm run test:deploy`: builds the base and Tally's image, starts the compose deployment
// (deploy/compose.yaml: PostgreSQL, Redis, the migration, two API replicas and a worker), sends
// a like storm through both replicas and checks every count and viewer state against the truth,
// kills the worker container, likes on, starts it again and checks again, stops an API replica
// (SIGTERM: it drains and exits 0), then tears everything down. Needs root, podman (runc), podman-compose and debootstrap: docs/deploying.md.
import { execFileSync } from 'node:child_process';
import { createAuth } from '../src/auth/jwt.js';
import { projectPath } from '../src/paths.js';

const JWT_SECRET = 'deploy-test-secret-0123456789abcdef01234';
const API = ['http://127.0.0.1:14001', 'http://127.0.0.1:14002'];
const env: NodeJS.ProcessEnv = {
  ...process.env,
  CONTAINERS_CONF: process.env.CONTAINERS_CONF ?? projectPath('deploy/podman/containers.conf'),
  JWT_SECRET,
  LOG_LEVEL: 'warn',
};
const started = Date.now();
const log = (line: string) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${line}`);
const run = (command: string, args: string[]) => execFileSync(command, args, { cwd: projectPath('deploy'), env, encoding: 'utf8' }).trim();
const compose = (...args: string[]) => run('podman-compose', ['-f', 'compose.yaml', ...args]);

async function gql(url: string, query: string, variables: Record<string, unknown>, token?: string) {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as { data?: Record<string, unknown>; errors?: unknown[] };
  if (body.errors) throw new Error(`${url}: ${JSON.stringify(body.errors)}`);
  return body.data as Data;
}

/** What the test reads: created posts and posts with their likes (every field it asks for). */
type Data = {
  createPost: { id: string };
  posts: { id: string; counts: { likes: number; asOf: string | null }; myState: { liked: boolean } | null }[];
};

async function until<T>(what: string, check: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check().catch(() => undefined as T);
    if (value !== undefined && done(value)) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

const READ = 'query($ids: [ID!]!) { posts(ids: $ids) { id counts { likes asOf } myState { liked } } }';
const LIKE = 'mutation($i: SetLikeRelationInput!) { setLikeRelation(input: $i) { changed } }';

async function main() {
  const base = run(projectPath('deploy/base.sh'), []);
  log(`base image ${base}`);
  env.BASE = base;
  const image = run(projectPath('deploy/build.sh'), []);
  log(`Tally's image ${image}: ${run('podman', ['image', 'inspect', image, '--format', '{{.Size}}'])} bytes`);
  compose('down');
  compose('build');
  // podman-compose 1.0 does not wait for healthy dependencies: start them in order here.
  compose('up', '-d', 'postgres', 'redis');
  await until('PostgreSQL', async () => run('podman', ['exec', 'deploy_postgres_1', 'pg_isready', '-h', '127.0.0.1']), Boolean);
  await until(
    'Redis',
    async () => run('podman', ['exec', 'deploy_redis_1', 'redis-cli', 'ping']),
    (out) => out === 'PONG',
  );
  compose('up', '-d', '--no-deps', 'migrate');
  const migrated = run('podman', ['wait', 'deploy_migrate_1']);
  if (migrated !== '0') throw new Error(`the migration exited with ${migrated}: ${run('podman', ['logs', 'deploy_migrate_1'])}`);
  compose('up', '-d', '--no-deps', 'api-1', 'api-2', 'worker');
  for (const url of [...API, 'http://127.0.0.1:14003']) {
    await until(`${url}/readyz`, async () => (await fetch(`${url}/readyz`)).ok, Boolean);
  }
  log('deployment ready: two API replicas and a worker');

  const auth = createAuth(JWT_SECRET);
  const author = await auth.sign(1);
  const posts: string[] = [];
  for (let i = 0; i < 5; i++) {
    posts.push(
      (await gql(API[i % 2]!, 'mutation($t: String!) { createPost(input: { title: $t, body: "b" }) { id } }', { t: `post ${i}` }, author))
        .createPost.id,
    );
  }
  const users = await Promise.all(Array.from({ length: 60 }, (_, i) => auth.sign(100 + i)));
  const truth = new Map<string, boolean>(); // `${user}:${post}` -> liked
  /** Every user sets a like on every post, through alternating replicas, some twice and some undone. */
  const storm = async (round: number) => {
    await Promise.all(
      users.map(async (token, u) => {
        for (const [p, postId] of posts.entries()) {
          const active = (u + p + round) % (3 + round) !== 0; // a third unset, then a quarter
          const url = API[(u + p) % 2]!;
          await gql(url, LIKE, { i: { postId, active } }, token);
          if (u % 7 === 0) await gql(API[(u + p + 1) % 2]!, LIKE, { i: { postId, active } }, token); // a retry through the other replica
          truth.set(`${u}:${postId}`, active);
        }
      }),
    );
  };
  const check = async (what: string) => {
    const since = Date.now();
    const expected = posts.map((id) => users.filter((_, u) => truth.get(`${u}:${id}`)).length);
    for (const url of API) {
      const read = await until(
        `${what}: counts through ${url}`,
        () => gql(url, READ, { ids: posts }),
        (d) => d.posts.every((p) => p.counts.asOf !== null && Date.parse(p.counts.asOf) > since),
      );
      const counts = read.posts.map((p) => p.counts.likes);
      if (JSON.stringify(counts) !== JSON.stringify(expected)) throw new Error(`${what}: ${url} counts ${counts}, truth ${expected}`);
    }
    for (const [u, token] of users.entries()) {
      const read = await gql(API[u % 2]!, READ, { ids: posts }, token);
      read.posts.forEach((p) => {
        if (p.myState?.liked !== truth.get(`${u}:${p.id}`))
          throw new Error(`${what}: user ${u}'s like of post ${p.id} reads ${p.myState?.liked}`);
      });
    }
    log(`${what}: counts ${expected.join(', ')} exact through both replicas; all ${users.length * posts.length} viewer states right`);
  };

  await storm(0);
  await check('after the storm');
  run('podman', ['kill', 'deploy_worker_1']);
  log('worker container killed');
  await storm(1); // the API replicas keep taking likes; nothing folds them meanwhile
  run('podman', ['start', 'deploy_worker_1']);
  await until('the worker again', async () => (await fetch('http://127.0.0.1:14003/readyz')).ok, Boolean);
  await check('after the worker was killed and started again');

  // A stop is SIGTERM to node (PID 1): the replica drains and exits cleanly, the other serves on.
  // (A process that ignored it would be killed after the 30 s and exit 137.)
  run('podman', ['stop', '--time', '30', 'deploy_api-2_1']);
  const exit = run('podman', ['inspect', 'deploy_api-2_1', '--format', '{{.State.ExitCode}}']);
  if (exit !== '0') throw new Error(`api-2 did not stop cleanly on SIGTERM (exit ${exit})`);
  await gql(API[0]!, READ, { ids: posts });
  log('api-2 stopped on SIGTERM: drained, exit 0; api-1 answers');
}

try {
  await main();
  log('deployment test passed');
} finally {
  try {
    compose('down');
    log('torn down');
  } catch (error) {
    console.error('tear-down failed:', (error as Error).message);
    process.exitCode = 1;
  }
}
