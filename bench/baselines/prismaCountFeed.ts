// Baseline (c) for the feed: what a typical team builds with Prisma. A row per like and per
// favourite (bench_feed_likes, bench_feed_favs, filled from the seeded relation facts), and
// one findMany for the page that includes the author, the relation counts (`_count`) and the
// viewer's own like and fav rows for myState; Apollo Server with its defaults, served by
// `startStandaloneServer`. No Redis. Its Prisma client is generated from
// bench/baselines/prisma/schema.prisma (`npm run bench:prisma`).

import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import { POST } from '../../src/domain/entities.js';
import { POST_RELATIONS } from '../../src/domain/relations.js';
import { typeDefs } from '../../src/graphql/schema.js';
import { DateTime, feedCursor, feedPosition } from './baselineFeed.js';
import { PrismaClient } from './generated/client.js';

const TABLES = { LIKE: 'bench_feed_likes', FAV: 'bench_feed_favs' } as const;

/**
 * Creates the baseline's like and fav tables from the active relation facts in PostgreSQL
 * (the durable copy of what the seed wrote), and returns how many rows each got.
 */
export async function createFeedRelationTables(databaseUrl: string): Promise<{ likes: number; favs: number }> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const rows: Record<string, number> = {};
    for (const kind of ['LIKE', 'FAV'] as const) {
      const table = TABLES[kind];
      await client.query(`DROP TABLE IF EXISTS ${table}`);
      await client.query(`
        CREATE TABLE ${table} (
          user_id BIGINT NOT NULL REFERENCES users (id),
          post_id BIGINT NOT NULL REFERENCES posts (id),
          PRIMARY KEY (user_id, post_id)
        )`);
      await client.query(`CREATE INDEX ON ${table} (post_id)`);
      const { rowCount } = await client.query(
        `INSERT INTO ${table} (user_id, post_id)
         SELECT user_id, entity_id FROM relation_facts WHERE entity_type = $1 AND kind = $2 AND active`,
        [POST, POST_RELATIONS[kind].name],
      );
      await client.query(`ANALYZE ${table}`);
      rows[kind] = rowCount ?? 0;
    }
    return { likes: rows.LIKE!, favs: rows.FAV! };
  } finally {
    await client.end();
  }
}

interface Context {
  viewer: Viewer | null;
}

export async function startPrismaCountFeedServer(env: NodeJS.ProcessEnv) {
  const prisma = new PrismaClient({ adapter: new PrismaPg({ connectionString: env.DATABASE_URL!, max: 10 }) }); // Tally's pool size
  const auth = createAuth(env.JWT_SECRET!);

  const feedPosts = (first: number, after: string | null | undefined, viewer: Viewer | null) => {
    const position = after ? feedPosition(after) : null;
    // No user has id 0: an anonymous viewer gets empty lists, and one query shape for both.
    const own = { where: { userId: BigInt(viewer?.id ?? 0) }, select: { userId: true } };
    return prisma.post.findMany({
      where: {
        deletedAt: null,
        ...(position && {
          OR: [{ createdAt: { lt: position.at } }, { createdAt: position.at, id: { lt: position.id } }],
        }),
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
      feed: async (_: unknown, args: { first: number; after?: string | null }, { viewer }: Context) => {
        const rows = await feedPosts(args.first, args.after, viewer);
        const edges = rows.slice(0, args.first).map((node) => ({ cursor: feedCursor(node.createdAt, node.id), node }));
        return { edges, pageInfo: { hasNextPage: rows.length > args.first, endCursor: edges.at(-1)?.cursor ?? null } };
      },
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
  const { url } = await startStandaloneServer(apollo, {
    listen: { host: env.HOST || '127.0.0.1', port: Number(env.PORT ?? 0) },
    context: async ({ req }) => ({ viewer: await auth.viewerFrom(req.headers.authorization) }),
  });
  return {
    url: url.replace(/\/$/, ''),
    async stop() {
      await apollo.stop();
      await prisma.$disconnect();
    },
  };
}
