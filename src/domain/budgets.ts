// The per-client budgets every mutation and list page draws from (token buckets,
// src/limits/rateLimiter.ts); their sizes are settings (src/config.ts).

export interface Budget {
  /** Tokens in a full bucket: the burst allowed. */
  capacity: number;
  /** The bucket refills `capacity` tokens over this many ms. */
  windowMs: number;
}

export const BUDGETS = {
  /** Likes, favourites and follows. */
  changes: 'changes',
  /** Creating and deleting posts, changing the profile. */
  writes: 'writes',
  /** Pages of the relation lists (likers, likedPosts, followers, following). */
  listPages: 'listPages',
  /** What anonymous queries cost (src/graphql/cost.ts), in cost points, per address. */
  reads: 'reads',
  /** Views recorded (recordViews: one token per id), per user or anonymous address. */
  views: 'views',
} as const;
export type BudgetName = keyof typeof BUDGETS;
