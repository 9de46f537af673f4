// Which users this process must treat as gone, from the moment their erasure starts: their
// token no longer works (UNAUTHENTICATED), their open sockets close, and nothing of theirs is
// shown (src/services/visibility.ts). Erasures started anywhere are announced
// (src/services/announcements.ts); a periodic look at the erasure list catches any this
// process missed. Users erased before this process started are refused by users.ensure, which
// never creates an erased user again.
import type { ErasureStore } from '../db/erasures.js';
import type { Logger } from '../log.js';
import type { Announcements } from './announcements.js';

export interface ErasedUsersDeps {
  store: ErasureStore;
  announcements: Pick<Announcements, 'on' | 'announce'>;
  refreshMs: number;
  logger: Logger;
}

/** How far back a refresh looks past the previous one (clock differences between processes). */
const REFRESH_OVERLAP_MS = 5000;

export function createErasedUsers(deps: ErasedUsersDeps) {
  const erased = new Set<number>();
  const listeners = new Set<(userId: number) => void>();
  let lastRefresh = new Date(Date.now() - REFRESH_OVERLAP_MS);
  let timer: NodeJS.Timeout | null = null;

  const learn = (userId: number) => {
    if (erased.has(userId)) return;
    erased.add(userId);
    for (const listener of listeners) listener(userId);
  };
  deps.announcements.on('erased', learn);

  /** Reads the erasures started since the last look (and a little before it). */
  async function refresh(): Promise<void> {
    const since = new Date(lastRefresh.getTime() - REFRESH_OVERLAP_MS);
    lastRefresh = new Date();
    for (const row of await deps.store.requestedSince(since)) learn(row.userId);
  }

  return {
    /** Whether the user's erasure started (as far as this process has heard). */
    has: (userId: number) => erased.has(userId),

    /** Called for each user this process learns is being erased. */
    onErased(listener: (userId: number) => void): void {
      listeners.add(listener);
    },

    /** Tells every process (this one at once) that the user's erasure started. */
    announce: (userId: number) => deps.announcements.announce('erased', userId),

    refresh,

    /** Loads the erasures in progress, then looks again every `refreshMs`. */
    async start(): Promise<void> {
      for (const row of await deps.store.running()) learn(row.userId);
      timer = setInterval(() => {
        refresh().catch((error: unknown) => deps.logger.warn({ err: error }, 'could not refresh the erasure list'));
      }, deps.refreshMs);
      timer.unref();
    },

    stop(): void {
      if (timer) clearInterval(timer);
    },
  };
}

export type ErasedUsers = ReturnType<typeof createErasedUsers>;
