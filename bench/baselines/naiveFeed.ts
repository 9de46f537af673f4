// Baseline for the "feed" scenario: what a straightforward GraphQL server does without
// DataLoader. Tally's schema, the same PostgreSQL rows, the same Redis keys (built
// with src/redis/keys.ts), but every field resolves on its own: one SQL query per author,
// one GET per post's counters and one fact lookup (Tally's hasFacts script) per post per kind
// for the viewer's state, on a plain ioredis connection (no auto-pipelining) and a plain pg pool.

import { ApolloServer } from '@apollo/server';
import { Redis } from 'ioredis';
import pg from 'pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import { unpackCounters } from '../../src/counters/packedCounters.js';
import { POST_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { typeDefs } from '../../src/graphql/schema.js';
import { createKeys } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { serveGraphQL } from '../lib/graphqlHttp.js';
import { trackRedis } from '../lib/redisStats.js';
import { DateTime, feedCursor, feedPosition } from './baselineFeed.js';

interface PostRow {
  id: string;
  author_id: string;
  title: string;
  body: string;
  created_at: Date;
}

interface Context {
  viewer: Viewer | null;
}

export async function startNaiveFeedServer(env: NodeJS.ProcessEnv) {
  const db = new pg.Pool({ connectionString: env.DATABASE_URL, max: 10 }); // Tally's Prisma pool size
  const redis = withScripts(new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379'));
  const redisStats = trackRedis(redis); // the same round-trip tracker Tally uses
  const keys = createKeys(env.REDIS_KEY_PREFIX ?? '', Number(env.PARTITIONS ?? 16));
  const auth = createAuth(env.JWT_SECRET!);

  const scripts = createScripts(redis, keys);
  // One script call per post and kind: what a resolver without a DataLoader does.
  const hasFact = async (kind: 'LIKE' | 'FAV', postId: number, userId: number) => {
    const [facts] = await scripts.hasFacts({ userId, type: POST, relations: [POST_RELATIONS[kind]], ids: [postId] });
    return facts!.has[0]! ? 1 : 0;
  };

  const resolvers = {
    DateTime,
    Query: {
      feed: async (_: unknown, args: { first: number; after?: string | null }) => {
        const after = args.after ? feedPosition(args.after) : null;
        const { rows } = await db.query<PostRow>(
          `SELECT id, author_id, title, body, created_at FROM posts
           WHERE deleted_at IS NULL AND ($2::bigint IS NULL OR (created_at, id) < (to_timestamp($2::bigint / 1000.0), $3::bigint))
           ORDER BY created_at DESC, id DESC LIMIT $1`,
          [args.first + 1, after?.at.getTime() ?? null, after?.id.toString() ?? null],
        );
        const edges = rows.slice(0, args.first).map((node) => ({ cursor: feedCursor(node.created_at, node.id), node }));
        return { edges, pageInfo: { hasNextPage: rows.length > args.first, endCursor: edges.at(-1)?.cursor ?? null } };
      },
    },
    Post: {
      createdAt: (post: PostRow) => post.created_at,
      // The N+1: one query per post's author.
      author: async (post: PostRow) => {
        const { rows } = await db.query('SELECT id, name, created_at FROM users WHERE id = $1', [post.author_id]);
        return rows[0];
      },
      counts: async (post: PostRow) => {
        const counters = unpackCounters(await redis.getBuffer(keys.counters({ type: POST, id: Number(post.id) })));
        return { likes: counters?.[POST_SLOTS.like] ?? 0, favs: counters?.[POST_SLOTS.fav] ?? 0, asOf: null };
      },
      myState: async (post: PostRow, _: unknown, { viewer }: Context) => {
        if (!viewer) return null;
        const [liked, faved] = await Promise.all([hasFact('LIKE', Number(post.id), viewer.id), hasFact('FAV', Number(post.id), viewer.id)]);
        return { liked: liked === 1, faved: faved === 1 };
      },
    },
    User: { createdAt: (user: { created_at: Date }) => user.created_at },
  };

  const apollo = new ApolloServer<Context>({ typeDefs, resolvers });
  const server = await serveGraphQL(apollo, async (authorization) => ({ viewer: await auth.viewerFrom(authorization) }));
  return {
    url: server.url,
    redisStats,
    async stop() {
      await server.stop();
      redis.disconnect();
      await db.end();
    },
  };
}
