// Starts a whole Tally process in this test file: its own database, its own Redis key
// prefix, a free port. `gql` speaks GraphQL over real HTTP.

import { Redis } from 'ioredis';
import { type App, type AppOptions, createApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { createTestDatabase, type TestDatabase } from './db.js';
import { TEST_REDIS_URL } from './env.js';
import { deleteKeys, uniquePrefix } from './redis.js';
import { startRedisServer } from './redisServer.js';

export const TEST_JWT_SECRET = 'test-secret-0123456789abcdef0123456789';

export interface GraphQLResponse<T = any> {
  status: number;
  headers: Headers;
  data?: T;
  errors?: { message: string; path?: (string | number)[]; extensions?: Record<string, any> }[];
  extensions?: Record<string, any>;
}

export interface TestApp {
  app: App;
  url: string;
  db: TestDatabase;
  token(userId: number, options?: { name?: string; expiresIn?: string }): Promise<string>;
  gql<T = any>(
    query: string,
    variables?: Record<string, unknown>,
    options?: { token?: string; headers?: Record<string, string> },
  ): Promise<GraphQLResponse<T>>;
  /** Creates `count` posts by `authorId` through the API, in order; returns their ids. */
  createPosts(count: number, authorId?: number): Promise<string[]>;
  stop(): Promise<void>;
}

export interface TestAppOptions extends AppOptions {
  /** Run against another test app's database and Redis prefix (a second process of one deployment). */
  sharing?: TestApp;
}

export async function startTestApp(env: Record<string, string> = {}, options: TestAppOptions = {}): Promise<TestApp> {
  const shared = options.sharing;
  const db = shared ? shared.db : await createTestDatabase();
  const prefix = shared ? shared.app.config.redisKeyPrefix : uniquePrefix();
  const config = loadConfig({
    // Production is what the tests run (errors masked, no introspection, no GraphiQL); a
    // test of what only development does says NODE_ENV: 'development'.
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: db.url,
    REDIS_URL: TEST_REDIS_URL,
    REDIS_KEY_PREFIX: prefix,
    JWT_SECRET: TEST_JWT_SECRET,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'silent',
    // Tests make many changes as one user; the rate-limit tests set their own budgets.
    RATE_LIMIT_CHANGES: '100000',
    RATE_LIMIT_WRITES: '100000',
    RATE_LIMIT_LIST_PAGES: '100000',
    ...env,
  });
  const app = createApp(config, options);
  let url: string;
  try {
    ({ url } = await app.start());
  } catch (error) {
    await app.stop().catch(() => {});
    if (!shared) await db.drop();
    throw error;
  }

  const gql: TestApp['gql'] = async (query, variables, requestOptions = {}) => {
    const headers: Record<string, string> = { 'content-type': 'application/json', ...requestOptions.headers };
    if (requestOptions.token) headers.authorization = `Bearer ${requestOptions.token}`;
    const res = await fetch(`${url}/graphql`, { method: 'POST', headers, body: JSON.stringify({ query, variables }) });
    const body = (await res.json()) as Omit<GraphQLResponse, 'status' | 'headers'>;
    return { status: res.status, headers: res.headers, ...body };
  };

  return {
    app,
    url,
    db,
    token: (userId, tokenOptions) => app.deps.auth.sign(userId, tokenOptions),
    gql,
    async createPosts(count, authorId = 1) {
      const token = await app.deps.auth.sign(authorId);
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const res = await gql(
          'mutation($t: String!) { createPost(input: { title: $t, body: "b" }) { id } }',
          { t: `post ${i}` },
          { token },
        );
        ids.push(res.data.createPost.id);
      }
      return ids;
    },
    async stop() {
      await app.stop();
      if (shared) return; // the owner cleans up
      await db.drop();
      // The app's Redis (one server, or every Cluster master) — unless a test pointed the app at a
      // proxy it has cut since: the keys then live on the test Redis behind it.
      const reachable = config.redisClusterNodes.length > 0 || env.REDIS_URL === undefined ? config : TEST_REDIS_URL;
      await deleteKeys(prefix, reachable);
    },
  };
}

/**
 * An API process and a worker on a redis-server of their own, for tests that do to Redis what a
 * shared one would not survive (FLUSHALL, a restart); `admin` is a connection to it.
 */
export async function startSplitOnOwnRedis(env: Record<string, string> = {}) {
  const server = await startRedisServer();
  const admin = new Redis(server.url);
  const started: TestApp[] = [];
  const stop = async () => {
    for (const app of started.reverse()) await app.stop(); // the worker first, the owner last
    admin.disconnect();
    await server.stop();
  };
  try {
    started.push(await startTestApp({ ...env, REDIS_URL: server.url, ROLE: 'api' }));
    started.push(await startTestApp({ ...env, REDIS_URL: server.url, ROLE: 'worker' }, { sharing: started[0] }));
  } catch (error) {
    await stop();
    throw error;
  }
  return { server, admin, api: started[0]!, worker: started[1]!, stop };
}

/** The `extensions.code` of every error in a response, for compact assertions. */
export const errorCodes = (res: GraphQLResponse) => (res.errors ?? []).map((e) => e.extensions?.code);
