// A cache's fetch that a forget or a clear (a deletion, a resync) cannot turn into "nothing":
// lru-cache aborts a lookup under way when its entry is deleted, and that fetch then answers
// undefined or throws the abort. The caller's read runs again, uncached, instead.

import type { LRUCache } from 'lru-cache';

/** What lru-cache's `status` option reports of a fetch (the part this needs). */
export interface FetchStatus {
  fetch?: LRUCache.Status<unknown, unknown>['fetch'];
  fetchAborted?: true;
}

/**
 * The reasons lru-cache aborts a fetch with when its entry goes. Only the caller that started
 * the fetch has `fetchAborted` in its status; one that joined it (`fetch: 'inflight'`) gets the
 * reason alone, thrown.
 */
const ABORT_REASONS = new Set(['deleted', 'evicted', 'replaced']);
const abortedJoin = (status: FetchStatus, error: unknown) =>
  status.fetch === 'inflight' && error instanceof Error && ABORT_REASONS.has(error.message);

export async function fetchUnlessForgotten<V>(fetch: (status: FetchStatus) => Promise<V | undefined>, read: () => Promise<V>): Promise<V> {
  const status: FetchStatus = {};
  try {
    const value = await fetch(status);
    if (value !== undefined) return value;
  } catch (error) {
    if (!status.fetchAborted && !abortedJoin(status, error)) throw error;
  }
  return read();
}
