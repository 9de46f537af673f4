// Per-client budgets (token buckets in Redis, lua/takeTokens-1.lua): every mutation draws
// from one, and so does every list page a query reads, since each is a SQL scan; an anonymous
// query draws its cost. A user is charged by id; an anonymous client by its address
// (src/limits/clientAddress.ts).
import { HeaderMap } from '@apollo/server';
import type { Budget, BudgetName } from '../domain/budgets.js';
import { rateLimited } from '../errors.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

/** Who is charged: a user, or an anonymous client by address. */
export type Client = { userId: number } | { address: string };

/** A budget taken all or nothing (RATE_LIMITED with HTTP 429 when refused). */
export interface AllOrNothingBudget {
  /** Takes `wanted` tokens, or throws the refusal. */
  take(client: Client, wanted: number): Promise<void>;
  /** The client's bucket and the budget's size, for a script that takes the tokens itself. */
  bucket(client: Client): { bucket: string; capacity: number; windowMs: number };
  /** The refusal of a request that such a script refused, `retryAfterMs` before it could pass. */
  refused(retryAfterMs: number): Error;
}

const DESCRIBED: Record<BudgetName, string> = {
  changes: 'changes',
  writes: 'writes',
  listPages: 'list pages',
  reads: 'query cost points',
  views: 'views',
};

export function createRateLimiter(deps: {
  redis: ScriptedRedis;
  keys: Keys;
  budgets: Record<BudgetName, Budget>;
  onRejected?: (budget: BudgetName) => void;
}) {
  const scripts = createScripts(deps.redis, deps.keys);
  const refusal = (name: BudgetName, retryAfterMs: number, http?: object) => {
    const { capacity, windowMs } = deps.budgets[name];
    deps.onRejected?.(name);
    return rateLimited(
      `too many ${DESCRIBED[name]}: at most ${capacity} per ${windowMs / 1000} s; try again in ${retryAfterMs} ms`,
      retryAfterMs,
      http,
    );
  };

  /** The client's bucket of a budget, and the budget's size. */
  const bucketOf = (name: BudgetName, client: Client) => ({
    ...deps.budgets[name],
    bucket: 'userId' in client ? deps.keys.rateLimit(name, client.userId) : deps.keys.addressRateLimit(name, client.address),
  });
  /** RATE_LIMITED for a request refused all it wanted at once: HTTP 429 with Retry-After. */
  const allRefused = (name: BudgetName, retryAfterMs: number) => {
    const headers = new HeaderMap([['retry-after', String(Math.ceil(retryAfterMs / 1000))]]);
    return refusal(name, retryAfterMs, { status: 429, headers });
  };

  /** Takes up to `wanted` tokens: how many were granted, and when the next one is back. */
  async function takeUpTo(name: BudgetName, client: Client, wanted: number, allOrNothing = false) {
    const { granted, value } = await scripts.takeTokens({ ...bucketOf(name, client), wanted, allOrNothing });
    return { granted, retryAfterMs: granted === wanted ? 0 : value };
  }

  /**
   * Takes `wanted` tokens (at most the budget's capacity) all at once, or none and refuses
   * the whole request: RATE_LIMITED with HTTP 429 and Retry-After.
   */
  async function takeAll(name: BudgetName, client: Client, wanted: number): Promise<void> {
    const { granted, retryAfterMs } = await takeUpTo(name, client, wanted, true);
    if (granted > 0) return;
    throw allRefused(name, retryAfterMs);
  }

  return {
    /** Takes one token, or throws RATE_LIMITED with the delay until the next one. */
    async take(name: BudgetName, client: Client): Promise<void> {
      const { granted, retryAfterMs } = await takeUpTo(name, client, 1);
      if (granted === 0) throw refusal(name, retryAfterMs);
    },

    takeAll,

    /**
     * One budget, all or nothing as `takeAll` takes it, for a caller that may instead take it
     * in a script of its own (lua/includes/tokenBucket.lua) with the work it pays for.
     */
    allOrNothing(name: BudgetName): AllOrNothingBudget {
      return {
        take: (client, wanted) => takeAll(name, client, wanted),
        bucket: (client) => bucketOf(name, client),
        refused: (retryAfterMs) => allRefused(name, retryAfterMs),
      };
    },

    /**
     * Takes `wanted` tokens at once, as far as they go: the result has one entry per token,
     * null where granted and a RATE_LIMITED error where refused.
     */
    async takeEach(name: BudgetName, client: Client, wanted: number): Promise<(Error | null)[]> {
      const { granted, retryAfterMs } = await takeUpTo(name, client, wanted);
      const refused = granted < wanted ? refusal(name, retryAfterMs) : null;
      return Array.from({ length: wanted }, (_, i) => (i < granted ? null : refused));
    },
  };
}

export type RateLimiter = ReturnType<typeof createRateLimiter>;
