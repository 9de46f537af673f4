import { Redis } from 'ioredis';
import { describe, expect, it } from 'vitest';
import { createAuth } from '../../src/auth/jwt.js';
import { AGGREGATOR_GROUP } from '../../src/events/groups.js';
import { createKeys } from '../../src/redis/keys.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { spawnTsx } from '../support/process.js';
import { useIsolatedStores } from '../support/stores.js';

const SECRET = 'process-test-secret-0123456789abcdef';
const auth = createAuth(SECRET);
const stores = useIsolatedStores();

describe('the service process (npm start)', () => {
  it('starts, serves, and on SIGTERM finishes and acknowledges its batches and exits 0', async () => {
    // Production, as deployed: Apollo's own signal handling differs under NODE_ENV=test.
    const proc = spawnTsx('src/main.ts', [], {
      NODE_ENV: 'production',
      LOG_LEVEL: 'info',
      HOST: '127.0.0.1',
      PORT: '0',
      ...stores.env(),
      JWT_SECRET: SECRET,
    });
    try {
      const [, url] = await proc.waitFor(/"url":"(http:\/\/[^"]+)\/graphql"/);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ feed { edges { node { id } } } }' }),
      });
      expect(await res.json()).toEqual({ data: { feed: { edges: [] } } });
      // One JSON log line per request, carrying the id the client got back.
      const requestId = res.headers.get('x-request-id');
      const line = await proc.waitFor(new RegExp(`\\{[^\\n]*"requestId":"${requestId}"[^\\n]*\\}`));
      expect(JSON.parse(line[0])).toMatchObject({ msg: 'graphql request', operation: 'query feed', outcome: 'ok' });

      // Likes keep arriving right up to SIGTERM: the workers must finish, acknowledge, leave.
      const token = await auth.sign(3);
      const gql = (query: string, variables = {}) =>
        fetch(`${url}/graphql`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
          body: JSON.stringify({ query, variables }),
        }).then((r) => r.json() as Promise<any>);
      const postId = (await gql('mutation { createPost(input: { title: "t", body: "b" }) { id } }')).data.createPost.id;
      await Promise.all(
        Array.from({ length: 30 }, async (_, i) => {
          const userToken = await auth.sign(100 + i);
          await fetch(`${url}/graphql`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', authorization: `Bearer ${userToken}` },
            body: JSON.stringify({ query: `mutation { setLikeRelation(input: { postId: "${postId}", active: true }) { changed } }` }),
          });
        }),
      );
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
    expect(proc.output()).toMatch(/"msg":"shutting down"/);

    const keys = createKeys(stores.prefix, 16);
    const redis = new Redis(TEST_REDIS_URL);
    try {
      for (let p = 0; p < 16; p++) {
        const groups = (await redis.xinfo('GROUPS', keys.outbox(p))) as unknown[][];
        for (const group of groups) expect(group[group.indexOf('pending') + 1], `partition ${p}`).toBe(0);
      }
      expect(await redis.zcard(keys.members(AGGREGATOR_GROUP))).toBe(0);
    } finally {
      redis.disconnect();
    }
  });

  it('fails fast with exit code 78 and names the missing setting in production', async () => {
    const proc = spawnTsx('src/main.ts', [], { NODE_ENV: 'production', JWT_SECRET: '', REDIS_URL: 'ftp://x' });
    expect(await proc.exited).toBe(78);
    expect(proc.output()).toContain('JWT_SECRET is required when NODE_ENV=production');
    expect(proc.output()).toContain('REDIS_URL must use redis: or rediss:');
  });
});

describe('npm run token', () => {
  it('prints a token the service accepts for that user and name', async () => {
    const proc = spawnTsx('src/cli/token.ts', ['77', 'Ada', 'Lovelace'], { JWT_SECRET: SECRET });
    expect(await proc.exited).toBe(0);
    const viewer = await createAuth(SECRET).viewerFrom(`Bearer ${proc.output().trim()}`);
    expect(viewer).toMatchObject({ id: 77, name: 'Ada Lovelace' });
  });

  it('refuses an id that is not a positive integer', async () => {
    const proc = spawnTsx('src/cli/token.ts', ['abc'], { JWT_SECRET: SECRET });
    expect(await proc.exited).toBe(2);
    expect(proc.output()).toContain('usage: npm run token');
  });
});
