// Live counts on one API replica: which local subscriptions watch which posts, users and
// entities a product owns,
// and what each flush pass's message becomes for them. A message is resolved once per
// entity (its counts from the pushed values, its row from the post cache or one users
// query) and the same object goes to every subscription watching it: a push costs the
// replica one resolution per entity, not one per socket. Pushes reach the subscriptions
// through the fan-out (fanOut.ts): a bounded number per event-loop turn.
import type { PostCounts } from '../counters/postCounters.js';
import type { UserCounts } from '../counters/userCounters.js';
import type { OwnedEntity } from '../db/entities.js';
import type { EntityCache } from '../db/entityCache.js';
import type { PostCache } from '../db/postCache.js';
import type { PostModel } from '../db/posts.js';
import type { UserModel, UserStore } from '../db/users.js';
import { USER_COUNTERS, type UserCounterValues } from '../domain/counters.js';
import { entityName, POST } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { Visibility } from '../services/visibility.js';
import type { CountsFeed, CountsMessage } from './countsFeed.js';
import { createFanOut } from './fanOut.js';
import { LiveStream } from './liveStream.js';

/** A post as pushed: the row, with the counts the flush pass published. */
export type LivePost = PostModel & { liveCounts: PostCounts; publishedAt: number };
/** An entity a product owns as pushed, with the counts the flush pass published. */
export type LiveEntity = OwnedEntity & { liveCounts: PostCounts; publishedAt: number };
export type LiveUser = UserModel & { liveCounts: UserCounts; publishedAt: number };

export interface WatchOptions {
  /** Called when this subscription's socket stopped reading (close it with 1013). */
  onStall: () => void;
}

export interface LiveCountsHooks {
  /** A push handed to its socket, `lagMs` after the flush pass published it. */
  onPush?: (lagMs: number) => void;
  /** A push replaced by a newer one before its socket took it. */
  onDropped?: () => void;
  /** Subscriptions open on this replica changed. */
  onSubscriptions?: (open: number) => void;
}

interface Watched<T> {
  streams: Set<LiveStream<T>>;
  /** The newest asOf pushed for the entity: an older message is never pushed after it. */
  asOf: number;
}

const STALL_CHECK_MS = 1000;
const POST_NAME_PREFIX = entityName({ type: POST, id: 0 }).slice(0, -1);

export function createLiveCounts(deps: {
  feed: CountsFeed;
  keys: Keys;
  postCache: PostCache;
  entityCache: EntityCache;
  users: UserStore;
  /** Pushes show what reads show: nothing deleted or of an erased user. */
  visibility: Visibility;
  stallMs: number;
  logger: Logger;
  hooks?: LiveCountsHooks;
}) {
  const { feed, keys, hooks = {} } = deps;
  const allStreams = new Set<LiveStream<unknown>>();
  const fanOut = createFanOut({ onDropped: hooks.onDropped });
  const stallTimer = setInterval(() => {
    const now = Date.now();
    for (const stream of allStreams) stream.checkStall(now);
  }, STALL_CHECK_MS);
  stallTimer.unref();

  /** Watching of one kind of entity: posts by partition channel, users by user partition channel. */
  function watching<T extends { id: number; publishedAt: number }>(kind: {
    channelOf: (id: number) => string;
    /** The id in a message's entity name (NaN for another kind's). */
    idOf: (name: string) => number;
    /** The pushed entities' objects, resolved once for all their subscribers (missing: not pushed). */
    resolve: (ids: number[], message: CountsMessage) => Promise<T[]>;
    /** Checked again when a socket takes the push: an erasure may have begun since. */
    stillVisible: (value: T) => boolean;
  }) {
    const watched = new Map<number, Watched<T>>();
    const unlistens = new Map<string, Promise<() => Promise<void>>>();
    const channelUsers = new Map<string, number>();

    async function onMessage(message: CountsMessage, channel: string) {
      const ids: number[] = [];
      for (const name of Object.keys(message.counts)) {
        const id = kind.idOf(name);
        const entry = watched.get(id);
        if (entry && message.asOf >= entry.asOf) ids.push(id);
      }
      if (ids.length === 0) return;
      try {
        for (const value of await kind.resolve(ids, message)) {
          const entry = watched.get(value.id);
          if (!entry || message.asOf < entry.asOf) continue;
          entry.asOf = message.asOf;
          for (const stream of entry.streams) fanOut.push(stream, value.id, value);
        }
      } catch (error) {
        deps.logger.error({ err: error, channel }, 'live counts: a push could not be resolved');
      }
    }

    async function holdChannel(channel: string) {
      channelUsers.set(channel, (channelUsers.get(channel) ?? 0) + 1);
      if (!unlistens.has(channel))
        unlistens.set(
          channel,
          feed.listen(channel, (message) => void onMessage(message, channel)),
        );
      await unlistens.get(channel);
    }

    async function releaseChannel(channel: string) {
      const users = (channelUsers.get(channel) ?? 1) - 1;
      if (users > 0) return channelUsers.set(channel, users);
      channelUsers.delete(channel);
      const unlisten = unlistens.get(channel);
      unlistens.delete(channel);
      await (await unlisten)?.();
    }

    return async (ids: readonly number[], options: WatchOptions): Promise<LiveStream<T>> => {
      const unique = [...new Set(ids)];
      const channels = [...new Set(unique.map(kind.channelOf))];
      const stream: LiveStream<T> = new LiveStream<T>({
        stallMs: deps.stallMs,
        stillVisible: kind.stillVisible,
        onTaken: (value) => hooks.onPush?.(Date.now() - value.publishedAt),
        onStall: options.onStall,
        onDropped: hooks.onDropped,
        onEnd: () => {
          allStreams.delete(stream as LiveStream<unknown>);
          hooks.onSubscriptions?.(allStreams.size);
          for (const id of unique) {
            const entry = watched.get(id);
            entry?.streams.delete(stream);
            if (entry?.streams.size === 0) watched.delete(id);
          }
          for (const channel of channels) void releaseChannel(channel).catch(() => {});
        },
      });
      for (const id of unique) {
        const entry = watched.get(id) ?? { streams: new Set(), asOf: 0 };
        entry.streams.add(stream);
        watched.set(id, entry);
      }
      allStreams.add(stream as LiveStream<unknown>);
      hooks.onSubscriptions?.(allStreams.size);
      await Promise.all(channels.map(holdChannel));
      return stream;
    };
  }

  const watchPosts = watching<LivePost>({
    channelOf: (id) => keys.countsChannel(keys.partitionOf({ type: POST, id })),
    idOf: (name) => (name.startsWith(POST_NAME_PREFIX) ? Number(name.slice(POST_NAME_PREFIX.length)) : Number.NaN),
    async resolve(ids, message) {
      const asOf = new Date(message.asOf);
      const found = await Promise.all(ids.map(async (id) => deps.visibility.post(await deps.postCache.get(id))));
      const pushed = found.flatMap((post) => {
        const slots = post && message.counts[entityName({ type: POST, id: post.id })];
        return post && slots ? [{ post, slots }] : []; // posts a client may not see do not push
      });
      if (pushed.length === 0) return [];
      // Authors come with the push, so a socket's `author` needs no read of its own after
      // the visibility check.
      const authors = new Map(
        deps.visibility.users(await deps.users.byIds([...new Set(pushed.map(({ post }) => post.authorId))])).map((user) => [user.id, user]),
      );
      return pushed.flatMap(({ post, slots }) => {
        const author = authors.get(post.authorId);
        if (!author) return []; // erased since the post was read
        return [
          {
            ...post,
            author,
            liveCounts: { slots, asOf },
            publishedAt: message.at,
          },
        ];
      });
    },
    stillVisible: (post) => deps.visibility.post(post) !== null,
  });

  const watchUsers = watching<LiveUser>({
    channelOf: (id) => keys.userCountsChannel(keys.userPartitionOf(id)),
    idOf: Number,
    async resolve(ids, message) {
      const asOf = new Date(message.asOf);
      return deps.visibility.users(await deps.users.byIds(ids)).flatMap((user) => {
        const slots = message.counts[String(user.id)];
        if (!slots) return [];
        const values = Object.fromEntries(USER_COUNTERS.map((field, slot) => [field, slots[slot] ?? 0])) as UserCounterValues;
        return [{ ...user, liveCounts: { ...values, asOf }, publishedAt: message.at }];
      });
    },
    stillVisible: (user) => deps.visibility.user(user) !== null,
  });

  // One watcher per owner type (a partition is of a type and an id); a deleted entity is
  // forgotten by the cache and no longer resolves.
  const entityWatchers = new Map(
    TYPES.owned.map((type) => {
      const prefix = entityName({ type: type.name, id: 0 }).slice(0, -1);
      const watch = watching<LiveEntity>({
        channelOf: (id) => keys.countsChannel(keys.partitionOf({ type: type.name, id })),
        idOf: (name) => (name.startsWith(prefix) ? Number(name.slice(prefix.length)) : Number.NaN),
        async resolve(ids, message) {
          const asOf = new Date(message.asOf);
          const found = await Promise.all(ids.map((id) => deps.entityCache.byId(id)));
          return found.flatMap((entity) => {
            const slots = entity && message.counts[entityName(entity)];
            return entity && slots ? [{ ...entity, liveCounts: { slots, asOf }, publishedAt: message.at }] : [];
          });
        },
        stillVisible: () => true,
      });
      return [type.name, watch] as const;
    }),
  );

  return {
    watchPosts,
    watchUsers,
    /** Entities of one owner type, by Tally's ids. */
    watchEntities: (type: string, ids: readonly number[], options: WatchOptions) => entityWatchers.get(type)!(ids, options),
    /** Subscriptions open on this replica. */
    open: () => allStreams.size,
    /** Ends every subscription (their sockets complete them) and stops listening. */
    close(): void {
      clearInterval(stallTimer);
      for (const stream of [...allStreams]) stream.end();
      feed.close();
    },
  };
}

export type LiveCounts = ReturnType<typeof createLiveCounts>;
