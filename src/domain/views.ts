// How views are counted (src/services/views.ts): a deployment's rules, from its settings (src/config.ts).

export interface ViewRules {
  /** A (viewer, entity) counts at most once per this many ms (VIEW_WINDOW_MS). */
  windowMs: number;
  /** Views without a token: counted in `total` by a digest of the client's address, or not at all (VIEWS_ANONYMOUS). */
  anonymous: 'address' | 'off';
  /** Whether an author's views of their own post count (VIEWS_COUNT_AUTHOR). */
  countAuthor: boolean;
  /** An entity's distinct viewers are counted exactly up to this many, estimated past it (VIEWS_EXACT_UP_TO). */
  exactUpTo: number;
  /** How often the views that changed are persisted to PostgreSQL: what a Redis loss may cost (VIEWS_PERSIST_INTERVAL_MS). */
  persistIntervalMs: number;
  /** Keys the digests that stand for viewers in Redis (VIEW_DIGEST_SECRET, else derived from JWT_SECRET). */
  digestSecret: string;
}

/** recordViews takes 1 to this many ids. */
export const MAX_VIEWS_PER_REQUEST = 100;
