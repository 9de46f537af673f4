// Baseline (b) of the feed (docs/performance.md, "The bench").
import { Redis } from 'ioredis';
import pg from 'pg';
import { unpackCounters } from '../../src/counters/packedCounters.js';
import { POST_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { typeDefs } from '../../src/graphql/schema.js';
import { createKeys } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { createScripts } from '../../src/redis/scripts.js';
import { DateTime, feedPage, feedPosition, POOL_SIZE, serveWithViewer, trackRedis, type ViewerContext } from './common.js';

type PostRow = { id: string; author_id: string; title: string; body: string; created_at: Date };

export async function startNaiveFeedServer(env: NodeJS.ProcessEnv) {
  const db = new pg.Pool({ connectionString: env.DATABASE_URL, max: POOL_SIZE });
  const redis = withScripts(new Redis(env.REDIS_URL ?? 'redis://127.0.0.1:6379'));
  const redisStats = trackRedis(redis); // the same round-trip tracker Tally uses
  const keys = createKeys(env.REDIS_KEY_PREFIX ?? '', Number(env.PARTITIONS ?? 16));
  const scripts = createScripts(redis, keys);
  // One script call per post and kind: what a resolver without a DataLoader does.
  const hasFact = async (kind: 'LIKE' | 'FAV', postId: number, userId: number) => {
    const facts = await scripts.hasFacts({ userId, type: POST, relations: [POST_RELATIONS[kind]], ids: [postId] });
    return facts.has(0, 0);
  };
  const resolvers = {
    DateTime,
    Query: {
      feed: async (_: unknown, args: { first: number; after?: string | null }) => {
        const after = feedPosition(args.after);
        const { rows } = await db.query<PostRow>(
          `SELECT id, author_id, title, body, created_at FROM posts
           WHERE deleted_at IS NULL AND ($2::bigint IS NULL OR (created_at, id) < (to_timestamp($2::bigint / 1000.0), $3::bigint))
           ORDER BY created_at DESC, id DESC LIMIT $1`,
          [args.first + 1, after?.at.getTime() ?? null, after?.id.toString() ?? null],
        );
        return feedPage(rows, args.first, (post) => [post.created_at, post.id]);
      },
    },
    Post: {
      createdAt: (post: PostRow) => post.created_at,
      // The N+1: one query per post's author.
      author: async (post: PostRow) => (await db.query('SELECT id, name, created_at FROM users WHERE id = $1', [post.author_id])).rows[0],
      counts: async (post: PostRow) => {
        const counters = unpackCounters(await redis.getBuffer(keys.counters({ type: POST, id: Number(post.id) })));
        return { likes: counters?.[POST_SLOTS.like] ?? 0, favs: counters?.[POST_SLOTS.fav] ?? 0, asOf: null };
      },
      myState: async (post: PostRow, _: unknown, { viewer }: ViewerContext) => {
        if (!viewer) return null;
        const [liked, faved] = await Promise.all([hasFact('LIKE', Number(post.id), viewer.id), hasFact('FAV', Number(post.id), viewer.id)]);
        return { liked, faved };
      },
    },
    User: { createdAt: (user: { created_at: Date }) => user.created_at },
  };
  const close = async () => {
    redis.disconnect();
    await db.end();
  };
  return { ...(await serveWithViewer(env, typeDefs, resolvers, close)), redisStats };
}
