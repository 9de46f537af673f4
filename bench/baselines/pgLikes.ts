// Baseline for the "like throughput" scenario: what most apps do. Each like is one
// PostgreSQL transaction: insert the (user, post) row guarded by a unique constraint, and
// only if a row was inserted bump the post's denormalised like_count. Its own tables
// (bench_likes, bench_posts) in the bench database; Tally's tables are not touched.
import { ApolloServer } from '@apollo/server';
import { GraphQLError } from 'graphql';
import pg from 'pg';
import { createAuth, type Viewer } from '../../src/auth/jwt.js';
import { serveGraphQL } from '../lib/graphqlHttp.js';

const typeDefs = `#graphql
  type Query { likeCount(postId: ID!): Int }
  type Mutation { setLikeRelation(input: SetLikeRelationInput!): LikeRelationPayload! }
  input SetLikeRelationInput { postId: ID!, kind: RelationKind = LIKE, active: Boolean!, idempotencyKey: String }
  enum RelationKind { LIKE FAV }
  type LikeRelationPayload { kind: RelationKind!, active: Boolean!, changed: Boolean! }
`;

const SCHEMA_SQL = `
  CREATE TABLE IF NOT EXISTS bench_posts (id BIGINT PRIMARY KEY, like_count BIGINT NOT NULL DEFAULT 0);
  CREATE TABLE IF NOT EXISTS bench_likes (
    id BIGSERIAL PRIMARY KEY,
    user_id BIGINT NOT NULL,
    post_id BIGINT NOT NULL REFERENCES bench_posts (id),
    created_at TIMESTAMPTZ NOT NULL DEFAULT now(),
    UNIQUE (user_id, post_id)
  )`;

async function withClient<T>(databaseUrl: string, work: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** (Re)creates the baseline's tables with zero likes on `postIds`. */
export async function resetLikeTables(databaseUrl: string, postIds: readonly number[]): Promise<void> {
  await withClient(databaseUrl, async (c) => {
    await c.query(SCHEMA_SQL);
    await c.query('TRUNCATE bench_likes, bench_posts');
    await c.query('INSERT INTO bench_posts (id) SELECT unnest($1::bigint[])', [postIds]);
    await c.query('ANALYZE bench_posts');
  });
}

/** Per post: the denormalised like_count and the number of like rows (they must agree). */
export async function readLikeCounts(databaseUrl: string): Promise<Map<number, { likeCount: number; rows: number }>> {
  return withClient(databaseUrl, async (c) => {
    const { rows } = await c.query<{ id: string; like_count: string; n: string }>(
      `SELECT p.id, p.like_count, (SELECT count(*) FROM bench_likes l WHERE l.post_id = p.id) AS n FROM bench_posts p`,
    );
    return new Map(rows.map((r) => [Number(r.id), { likeCount: Number(r.like_count), rows: Number(r.n) }]));
  });
}

interface Input {
  postId: string;
  kind: 'LIKE' | 'FAV';
  active: boolean;
}

export async function startPgLikeServer(env: NodeJS.ProcessEnv) {
  // BENCH_PG_SYNCHRONOUS_COMMIT=off: the variant that, like this machine's Redis, does not
  // wait for its write to reach the disk before answering.
  const sync = env.BENCH_PG_SYNCHRONOUS_COMMIT;
  const pool = new pg.Pool({
    connectionString: env.DATABASE_URL,
    max: 10, // Tally's Prisma pool size
    ...(sync ? { options: `-c synchronous_commit=${sync}` } : {}),
  });
  const auth = createAuth(env.JWT_SECRET!);

  async function setLike(userId: number, postId: number, active: boolean): Promise<boolean> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rowCount } = active
        ? await client.query('INSERT INTO bench_likes (user_id, post_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userId, postId])
        : await client.query('DELETE FROM bench_likes WHERE user_id = $1 AND post_id = $2', [userId, postId]);
      const changed = rowCount === 1;
      if (changed) {
        await client.query(`UPDATE bench_posts SET like_count = like_count ${active ? '+' : '-'} 1 WHERE id = $1`, [postId]);
      }
      await client.query('COMMIT');
      return changed;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  const resolvers = {
    Query: {
      likeCount: async (_: unknown, { postId }: { postId: string }) => {
        const { rows } = await pool.query('SELECT like_count FROM bench_posts WHERE id = $1', [postId]);
        return rows[0] ? Number(rows[0].like_count) : null;
      },
    },
    Mutation: {
      setLikeRelation: async (_: unknown, { input }: { input: Input }, { viewer }: { viewer: Viewer | null }) => {
        if (!viewer) throw new GraphQLError('authentication required', { extensions: { code: 'UNAUTHENTICATED' } });
        if (input.kind !== 'LIKE') throw new GraphQLError('only LIKE', { extensions: { code: 'BAD_USER_INPUT' } });
        const changed = await setLike(viewer.id, Number(input.postId), input.active);
        return { kind: input.kind, active: input.active, changed };
      },
    },
  };

  const apollo = new ApolloServer<{ viewer: Viewer | null }>({ typeDefs, resolvers });
  const server = await serveGraphQL(apollo, async (authorization) => ({ viewer: await auth.viewerFrom(authorization) }));
  return {
    url: server.url,
    async stop() {
      await server.stop();
      await pool.end();
    },
  };
}
