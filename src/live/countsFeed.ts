// The API's end of the live counts channels: one subscriber connection that SSUBSCRIBEs to a
// partition's channel while some local subscription watches an entity there, and lets go of
// it when none does, so a replica hears only what its own sockets need. On a Redis Cluster
// each channel is read from the master that owns its slot.
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';

/** What a flush pass publishes (lua/includes/pushCounts.lua). */
export interface CountsMessage {
  /** Epoch ms: every change acknowledged before it is in these counters. */
  asOf: number;
  /** Epoch ms (Redis's clock) when the flush pass published it. */
  at: number;
  /** Entity name (`post:12`, or a user id) → its counters in slot order. */
  counts: Record<string, number[]>;
}

type Listener = (message: CountsMessage) => void;

export function createCountsFeed(subscriber: RedisClient, logger: Logger) {
  const listeners = new Map<string, Set<Listener>>();
  // Subscribing and unsubscribing one channel in order, so a quick unwatch/watch cannot
  // leave it unsubscribed while a listener waits on it.
  const pending = new Map<string, Promise<unknown>>();
  const inOrder = (channel: string, work: () => Promise<unknown>) => {
    const next = (pending.get(channel) ?? Promise.resolve()).then(work, work);
    pending.set(channel, next);
    return next;
  };

  subscriber.on('smessage', (channel: string, raw: string) => {
    const forChannel = listeners.get(channel);
    if (!forChannel) return;
    let message: CountsMessage;
    try {
      message = JSON.parse(raw) as CountsMessage;
    } catch {
      logger.error({ channel }, 'ignoring a live counts message that is not JSON');
      return;
    }
    for (const listener of forChannel) listener(message);
  });

  return {
    /** Calls `listener` for every message on `channel` until the returned function is called. */
    async listen(channel: string, listener: Listener): Promise<() => Promise<void>> {
      let forChannel = listeners.get(channel);
      if (!forChannel) {
        forChannel = new Set();
        listeners.set(channel, forChannel);
        await inOrder(channel, () => subscriber.ssubscribe(channel));
      }
      forChannel.add(listener);
      return async () => {
        const current = listeners.get(channel);
        if (!current?.delete(listener) || current.size > 0) return;
        listeners.delete(channel);
        await inOrder(channel, () => (listeners.has(channel) ? Promise.resolve() : subscriber.sunsubscribe(channel)));
      };
    },

    /** Channels this replica listens to (for tests and metrics). */
    channels: () => [...listeners.keys()],

    close(): void {
      listeners.clear();
      subscriber.disconnect();
    },
  };
}

export type CountsFeed = ReturnType<typeof createCountsFeed>;
