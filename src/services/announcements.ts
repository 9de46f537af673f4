// How API processes tell each other, within milliseconds, what no cache may go on showing: a
// post was deleted, a user's erasure began. Announcements travel on Redis channels, heard on a
// connection of their own in subscriber mode (SUBSCRIBE): live counts' SSUBSCRIBEs once shared
// it, and when their last SUNSUBSCRIBE answered 0 ioredis took the connection out of
// subscriber mode and dropped erasures. A process that cannot hear announcements says so:
// `listening()` turns false when its connection drops or leaves two heartbeats unanswered
// (and /readyz with it). Until it hears again it catches up (`onResync`: forget the caches,
// re-read the erasure list) every heartbeat, so what it shows is never older than that; once
// it hears again it catches up one last time before turning true.
import type { Logger } from '../log.js';
import type { RedisClient } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';

export type AnnouncementKind = 'erased' | 'deleted' | 'entityDeleted';

/**
 * How long after an announcement every API process acts on it, at the latest: one that did
 * not hear it stops listening within two heartbeats and catches up on the next.
 */
export const heardEverywhereWithinMs = (heartbeatMs: number) => 3 * heartbeatMs;

export interface AnnouncementsDeps {
  /** Publishes announcements (any connection). */
  publisher: RedisClient;
  /** This connection is for announcements alone; null where nobody needs to hear them (tools). */
  subscriber: RedisClient | null;
  /** The channel of each kind: a user id whose erasure began, a post id that was deleted, Tally's id of a deleted entity a product owns. */
  channels: Record<AnnouncementKind, string>;
  /** How often the subscriber connection is pinged; unanswered for 2 of these, it is not listening. */
  heartbeatMs: number;
  /** Catches up on what may have been missed while not listening (re-read lists, drop caches). */
  onResync: () => Promise<void>;
  logger: Logger;
}

/** The channel of each kind of announcement. */
export const announcementChannels = (keys: Keys): Record<AnnouncementKind, string> => ({
  erased: keys.erasuresChannel(),
  deleted: keys.deletionsChannel(),
  entityDeleted: keys.entityDeletionsChannel(),
});

export function createAnnouncements(deps: AnnouncementsDeps) {
  const { subscriber, channels } = deps;
  const listeners: Record<AnnouncementKind, Set<(id: number) => void>> = {
    erased: new Set(),
    deleted: new Set(),
    entityDeleted: new Set(),
  };
  const kindOf = new Map(Object.entries(channels).map(([kind, channel]) => [channel, kind as AnnouncementKind]));
  let subscribed = false;
  let lastAnswer = 0;
  let heartbeat: NodeJS.Timeout | null = null;

  const hear = (kind: AnnouncementKind, id: number) => {
    for (const listener of listeners[kind]) listener(id);
  };

  const onMessage = (channel: string, message: string) => {
    const kind = kindOf.get(channel);
    const id = Number(message);
    if (kind && Number.isSafeInteger(id) && id > 0) hear(kind, id);
  };

  const listening = () => !subscriber || (subscribed && Date.now() - lastAnswer <= 2 * deps.heartbeatMs);
  const catchUp = () => deps.onResync().catch((error: unknown) => deps.logger.warn({ err: error }, 'could not catch up on announcements'));

  /** Subscribes (again, after a reconnect: ioredis's own resubscription is not awaited), then catches up. */
  async function subscribe(): Promise<void> {
    if (!subscriber) return;
    await subscriber.subscribe(...Object.values(channels));
    await deps.onResync();
    lastAnswer = Date.now();
    subscribed = true;
  }

  const onReady = () => {
    if (subscribed) return; // the first subscription is start()'s
    subscribe().catch((error: unknown) => deps.logger.warn({ err: error }, 'could not subscribe to announcements again'));
  };
  const onClose = () => {
    if (!subscribed) return;
    subscribed = false;
    deps.logger.warn('announcements connection lost: not ready until it is back and caught up');
  };

  return {
    /** Calls `listener` with each id announced as `kind`, by any process (this one included). */
    on(kind: AnnouncementKind, listener: (id: number) => void): void {
      listeners[kind].add(listener);
    },

    /** Tells every process (this one at once, before the publish) that `id` is `kind`. */
    async announce(kind: AnnouncementKind, id: number): Promise<void> {
      hear(kind, id);
      await deps.publisher.publish(channels[kind], String(id));
    },

    /** Whether this process hears announcements now (always true where it need not). */
    listening,

    async start(): Promise<void> {
      if (!subscriber) return;
      subscriber.on('message', onMessage);
      subscriber.on('ready', onReady);
      subscriber.on('close', onClose);
      await subscribe();
      let deaf = false;
      heartbeat = setInterval(() => {
        // Not hearing: whatever was announced meanwhile is caught up on, every heartbeat.
        if (!listening()) {
          if (!deaf) deps.logger.warn('not hearing announcements: caches are forgotten every heartbeat until it does');
          deaf = true;
          void catchUp();
        } else deaf = false;
        subscriber
          .ping()
          .then(() => {
            lastAnswer = Date.now();
          })
          .catch(() => {}); // a dead connection is replaced by the client (REDIS_SOCKET_TIMEOUT_MS)
      }, deps.heartbeatMs);
      heartbeat.unref();
    },

    stop(): void {
      if (heartbeat) clearInterval(heartbeat);
      subscriber?.off('message', onMessage);
      subscriber?.off('ready', onReady);
      subscriber?.off('close', onClose);
    },
  };
}

export type Announcements = ReturnType<typeof createAnnouncements>;
