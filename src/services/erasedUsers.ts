// Which users this process must treat as gone, from the moment their erasure starts: their
// token no longer works (UNAUTHENTICATED) and their open sockets close. Erasures started
// anywhere are announced on a Redis channel; a periodic look at the erasure list catches any
// announcement this process missed (a reconnect). Users erased before this process started
// are refused by users.ensure, which never creates an erased user again.
import type { ErasureStore } from '../db/erasures.js';
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';

export interface ErasedUsersDeps {
  store: ErasureStore;
  /** Publishes announcements (any connection). */
  publisher: RedisClient;
  /** A connection in subscriber mode for announcements; null where nobody needs to hear them (tools). */
  subscriber: RedisClient | null;
  channel: string;
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

  async function refresh(): Promise<void> {
    const since = new Date(lastRefresh.getTime() - REFRESH_OVERLAP_MS);
    lastRefresh = new Date();
    for (const row of await deps.store.requestedSince(since)) learn(row.userId);
  }

  const onMessage = (channel: string, message: string) => {
    if (channel !== deps.channel) return;
    const userId = Number(message);
    if (Number.isSafeInteger(userId) && userId > 0) learn(userId);
  };

  return {
    /** Whether the user's erasure started (as far as this process has heard). */
    has: (userId: number) => erased.has(userId),

    /** Called for each user this process learns is being erased. */
    onErased(listener: (userId: number) => void): void {
      listeners.add(listener);
    },

    /** Tells every process (this one at once) that the user's erasure started. */
    async announce(userId: number): Promise<void> {
      learn(userId);
      await deps.publisher.publish(deps.channel, String(userId));
    },

    async start(): Promise<void> {
      for (const row of await deps.store.running()) learn(row.userId);
      if (deps.subscriber) {
        deps.subscriber.on('message', onMessage);
        await deps.subscriber.subscribe(deps.channel);
      }
      timer = setInterval(() => {
        refresh().catch((error: unknown) => deps.logger.warn({ err: error }, 'could not refresh the erasure list'));
      }, deps.refreshMs);
      timer.unref();
    },

    stop(): void {
      if (timer) clearInterval(timer);
      deps.subscriber?.off('message', onMessage);
    },
  };
}

export type ErasedUsers = ReturnType<typeof createErasedUsers>;
