// Baseline (c) of the feed (docs/performance.md, "The bench").
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { PrismaPg } from '@prisma/adapter-pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { typeDefs } from '../../src/graphql/schema.js';
import { DateTime, feedPage, feedPosition, POOL_SIZE, withPg } from './common.js';
import { PrismaClient } from './generated/client.js';

export async function createFeedRelationTables(databaseUrl: string, seeded: Iterable<{ likes: number; favs: number }>) {
  const posts = [...seeded];
  const expected = { LIKE: posts.reduce((n, e) => n + e.likes, 0), FAV: posts.reduce((n, e) => n + e.favs, 0) };
  await withPg(databaseUrl, async (client) => {
    for (const [kind, table] of Object.entries({ LIKE: 'bench_feed_likes', FAV: 'bench_feed_favs' }) as ['LIKE' | 'FAV', string][]) {
      await client.query(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (user_id BIGINT NOT NULL REFERENCES users (id),
        post_id BIGINT NOT NULL REFERENCES posts (id), PRIMARY KEY (user_id, post_id)); CREATE INDEX ON ${table} (post_id)`);
      const { rowCount } = await client.query(
        `INSERT INTO ${table} (user_id, post_id) SELECT user_id, entity_id FROM relation_facts WHERE entity_type = $1 AND kind = $2 AND active`,
        [POST, POST_RELATIONS[kind].name],
      );
      await client.query(`ANALYZE ${table}`);
      if (rowCount !== expected[kind]) throw new Error(`${table} got ${rowCount} rows, the seed wrote ${expected[kind]}`);
    }
  });
}

type Context = { viewer: Viewer | null };

export async function startPrismaCountFeedServer(env: NodeJS.ProcessEnv) {
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: env.DATABASE_URL!, max: POOL_SIZE }) });
  const auth = createAuth(env.JWT_SECRET!);
  const feedPosts = (first: number, after: string | null | undefined, viewer: Viewer | null) => {
    const position = feedPosition(after);
    // No user has id 0: an anonymous viewer gets empty lists, and one query shape for both.
    const own = { where: { userId: BigInt(viewer?.id ?? 0) }, select: { userId: true } };
    return prisma.post.findMany({
      where: {
        deletedAt: null,
        ...(position && { OR: [{ createdAt: { lt: position.at } }, { createdAt: position.at, id: { lt: position.id } }] }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: first + 1,
      include: { author: true, _count: { select: { likes: true, favs: true } }, likes: own, favs: own },
    });
  };
  type FeedPost = Awaited<ReturnType<typeof feedPosts>>[number];
  const resolvers = {
    DateTime,
    Query: {
      feed: async (_: unknown, args: { first: number; after?: string | null }, { viewer }: Context) =>
        feedPage(await feedPosts(args.first, args.after, viewer), args.first, (post) => [post.createdAt, post.id]),
    },
    Post: {
      id: (post: FeedPost) => String(post.id),
      counts: (post: FeedPost) => ({ likes: post._count.likes, favs: post._count.favs, asOf: null }),
      myState: (post: FeedPost, _: unknown, { viewer }: Context) =>
        viewer ? { liked: post.likes.length > 0, faved: post.favs.length > 0 } : null,
    },
    // GraphQL's ID does not serialise a bigint.
    User: { id: (user: { id: bigint }) => String(user.id) },
  };
  const apollo = new ApolloServer<Context>({ typeDefs, resolvers });
  const listen = { host: env.HOST || '127.0.0.1', port: Number(env.PORT ?? 0) };
  const { url } = await startStandaloneServer(apollo, {
    listen,
    context: async ({ req }) => ({ viewer: await auth.viewerFrom(req.headers.authorization) }),
  });
  return { url: url.replace(/\/$/, ''), stop: () => apollo.stop().then(() => prisma.$disconnect()) };
}
