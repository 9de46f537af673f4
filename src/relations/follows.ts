// Follows are relation facts like likes: user A following user B is bit A in the bitmap of
// entity user:B, metric "follow", set by the same Lua script (which appends the event).
export const USER = 'user';
export const FOLLOW = 'follow';
/** Field of a user entity's counters that follow events would move (unused: see userCounters). */
export const FOLLOW_SDS_INDEX = 1;
