// Per-user rate limit on relation changes: a token bucket in Redis, one Lua call per change
// (so 100 aliased mutations in one document take 100 tokens).
import { rateLimited } from '../errors.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';

export function createRateLimiter(deps: { redis: ScriptedRedis; keys: Keys; capacity: number; windowMs: number; onRejected?: () => void }) {
  return {
    /** Takes a token for `userId`, or throws RATE_LIMITED with the delay until the next one. */
    async take(userId: number): Promise<void> {
      const reply = await deps.redis.takeToken(deps.keys.rateLimit(userId), deps.capacity, deps.windowMs);
      if (!Array.isArray(reply)) throw new Error(`takeToken refused its arguments (code ${reply})`);
      const [taken, value] = reply;
      if (taken === 1) return;
      deps.onRejected?.();
      throw rateLimited(
        `too many changes: at most ${deps.capacity} per ${deps.windowMs / 1000} s; try again in ${value} ms`,
        value,
      );
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
