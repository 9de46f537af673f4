// Baseline of the hot post (docs/performance.md, "The bench").
import { GraphQLError } from 'graphql';
import pg from 'pg';
import { POOL_SIZE, serveWithViewer, type ViewerContext, withPg } from './common.js';

const typeDefs = `#graphql
  type Query { likeCount(postId: ID!): Int }
  type Mutation { setLikeRelation(input: SetLikeRelationInput!): LikeRelationPayload! }
  input SetLikeRelationInput { postId: ID!, active: Boolean! }
  type LikeRelationPayload { changed: Boolean! }
`;

export const resetLikeTables = (databaseUrl: string, postIds: readonly number[]) =>
  withPg(databaseUrl, async (c) => {
    await c.query(`DROP TABLE IF EXISTS bench_likes, bench_posts;
      CREATE TABLE bench_posts (id BIGINT PRIMARY KEY, like_count BIGINT NOT NULL DEFAULT 0);
      CREATE TABLE bench_likes (id BIGSERIAL PRIMARY KEY, user_id BIGINT NOT NULL, post_id BIGINT NOT NULL REFERENCES bench_posts (id),
        created_at TIMESTAMPTZ NOT NULL DEFAULT now(), UNIQUE (user_id, post_id))`);
    await c.query('INSERT INTO bench_posts (id) SELECT unnest($1::bigint[])', [postIds]);
    await c.query('ANALYZE bench_posts');
  });

export const countLikeRows = (databaseUrl: string, postId: number) =>
  withPg(databaseUrl, async (c) => Number((await c.query('SELECT count(*) AS n FROM bench_likes WHERE post_id = $1', [postId])).rows[0].n));

export async function startPgLikeServer(env: NodeJS.ProcessEnv) {
  // BENCH_PG_SYNCHRONOUS_COMMIT=off: like this machine's Redis, not waiting for the disk before answering.
  const sync = env.BENCH_PG_SYNCHRONOUS_COMMIT;
  const pool = new pg.Pool({
    connectionString: env.DATABASE_URL,
    max: POOL_SIZE,
    ...(sync && { options: `-c synchronous_commit=${sync}` }),
  });
  // Insert the (user, post) row guarded by a unique constraint; only if one was inserted, bump the post's like_count.
  async function setLike(userId: number, postId: number, active: boolean): Promise<boolean> {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const { rowCount } = active
        ? await client.query('INSERT INTO bench_likes (user_id, post_id) VALUES ($1, $2) ON CONFLICT DO NOTHING', [userId, postId])
        : await client.query('DELETE FROM bench_likes WHERE user_id = $1 AND post_id = $2', [userId, postId]);
      if (rowCount === 1)
        await client.query(`UPDATE bench_posts SET like_count = like_count ${active ? '+' : '-'} 1 WHERE id = $1`, [postId]);
      await client.query('COMMIT');
      return rowCount === 1;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }
  const resolvers = {
    Query: {
      likeCount: async (_: unknown, { postId }: { postId: string }) =>
        Number((await pool.query('SELECT like_count FROM bench_posts WHERE id = $1', [postId])).rows[0]?.like_count ?? 0),
    },
    Mutation: {
      setLikeRelation: async (_: unknown, { input }: { input: { postId: string; active: boolean } }, { viewer }: ViewerContext) => {
        if (!viewer) throw new GraphQLError('authentication required', { extensions: { code: 'UNAUTHENTICATED' } });
        return { changed: await setLike(viewer.id, Number(input.postId), input.active) };
      },
    },
  };
  return serveWithViewer(env, typeDefs, resolvers, () => pool.end());
}
