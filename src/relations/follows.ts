// Follows are relation facts like likes: user A following user B is bit A in the bitmap of
// entity user:B, metric "follow", set by the same Lua script (which appends the event).
export const USER = 'user';
export const FOLLOW = 'follow';
/**
 * The `idx` follow events carry. No SDS is folded from them (the aggregator counts posts
 * only; user counters are kept by the fact persister), but the event format requires one.
 */
export const FOLLOW_SDS_INDEX = 1;
