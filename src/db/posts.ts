// Posts in PostgreSQL. Deletion is soft: a deleted post keeps its row (facts and counters
// may still point at it) but disappears from every read.

import { ZERO_USER_COUNTERS } from '../domain/counters.js';
import type { Db } from './client.js';
import { addUserCounts, type UserCountRow } from './userCounters.js';
import { toUser, type UserModel } from './users.js';

export interface PostModel {
  id: number;
  authorId: number;
  title: string;
  body: string;
  createdAt: Date;
  /** Its author, when the post was read together with it (feed pages). */
  author?: UserModel;
}

/** Position of a post in newest-first order; the feed cursor carries it. */
export interface FeedPosition {
  createdAt: Date;
  id: number;
}

interface PostRow {
  id: bigint;
  authorId: bigint;
  title: string;
  body: string;
  createdAt: Date;
}

const toPost = (row: PostRow): PostModel => ({
  id: Number(row.id),
  authorId: Number(row.authorId),
  title: row.title,
  body: row.body,
  createdAt: row.createdAt,
});

const LIVE = { deletedAt: null };

export function createPostStore(db: Db) {
  return {
    /** Creates a post and counts it in its author's counters, in one transaction. */
    async create(authorId: number, title: string, body: string): Promise<{ post: PostModel; counters: UserCountRow[] }> {
      return db.$transaction(async (tx) => {
        const post = toPost(await tx.post.create({ data: { authorId, title, body } }));
        const counters = await addUserCounts(tx, new Map([[authorId, { ...ZERO_USER_COUNTERS, posts: 1 }]]));
        return { post, counters };
      });
    },

    /** Soft-deletes a live post and uncounts it, in one transaction; null when there is no live post. */
    async softDelete(id: number): Promise<{ post: PostModel; counters: UserCountRow[] } | null> {
      return db.$transaction(async (tx) => {
        const [row] = await tx.post.updateManyAndReturn({ where: { id, ...LIVE }, data: { deletedAt: new Date() } });
        if (!row) return null;
        const post = toPost(row);
        const counters = await addUserCounts(tx, new Map([[post.authorId, { ...ZERO_USER_COUNTERS, posts: -1 }]]));
        return { post, counters };
      });
    },

    /** Up to `n` live posts picked at random (ids drawn from the id range: no table scan). */
    async randomLiveIds(n: number): Promise<number[]> {
      const { _min, _max } = await db.post.aggregate({ _min: { id: true }, _max: { id: true } });
      if (_min.id === null || _max.id === null) return [];
      const [low, high] = [Number(_min.id), Number(_max.id)];
      const ids = Array.from({ length: n }, () => low + Math.floor(Math.random() * (high - low + 1)));
      const rows = await db.post.findMany({ where: { id: { in: [...new Set(ids)] }, ...LIVE }, select: { id: true } });
      return rows.map((r) => Number(r.id));
    },

    /** Live posts among `ids`, in no particular order. */
    async liveByIds(ids: readonly number[]): Promise<PostModel[]> {
      const rows = await db.post.findMany({ where: { id: { in: [...ids] }, ...LIVE } });
      return rows.map(toPost);
    },

    /**
     * Up to `limit` live posts strictly after `after` in newest-first order, with their
     * authors (one statement), walking posts_created_at_id_idx from the cursor: a page costs
     * the same however deep it is (no OFFSET).
     */
    async feedPage(limit: number, after: FeedPosition | null): Promise<PostModel[]> {
      const rows = await db.post.findMany({
        where: {
          ...LIVE,
          ...(after && {
            // The redundant `lte` bound becomes the index condition; the OR only trims ties.
            createdAt: { lte: after.createdAt },
            OR: [{ createdAt: { lt: after.createdAt } }, { createdAt: after.createdAt, id: { lt: after.id } }],
          }),
        },
        orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
        take: limit,
        include: { author: true },
      });
      return rows.map((row) => ({ ...toPost(row), author: toUser(row.author) }));
    },
  };
}

export type PostStore = ReturnType<typeof createPostStore>;
