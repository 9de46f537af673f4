// Counter layouts: which slot of a post's packed counters holds which count, and the order of a user's
// counters (their packed counters in Redis, their row in PostgreSQL). Scripts and readers take them from
// here; nothing else spells a slot as a number.

/** Packed counters hold at least this many uint32 slots (lua/includes/packedCounters.lua: BASE_SLOTS). */
export const COUNTER_SLOTS = 5;
/** And at most this many (MAX_SLOTS there): the post slots and every registered kind's. */
export const MAX_COUNTER_SLOTS = 64;

/**
 * A post's counter slots. `read` counts views and `viewers` estimates the distinct viewers
 * (src/services/views.ts); slot 3 was reserved for comments, which are entities of their own now.
 */
export const POST_SLOTS = { read: 0, like: 1, fav: 2, viewers: 3, repost: 4 } as const;

/**
 * The slots views move (lua/foldViews-3.lua). Neither the facts nor the event log count them:
 * counters rebuilt from either keep these as they stand (includes/packedCounters: keepViews).
 */
export const VIEW_SLOTS = { total: POST_SLOTS.read, unique: POST_SLOTS.viewers } as const;

/** A user's counters, in counter slot order. */
export const USER_COUNTERS = ['followings', 'followers', 'posts', 'likesReceived', 'favsReceived'] as const;
export type UserCounter = (typeof USER_COUNTERS)[number];
export type UserCounterValues = Record<UserCounter, number>;

export const ZERO_USER_COUNTERS: UserCounterValues = { followings: 0, followers: 0, posts: 0, likesReceived: 0, favsReceived: 0 };
