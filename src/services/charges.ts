// What a command costs its caller: a token from one of the user's budgets (src/domain/budgets.ts).
// Requests from clients are charged; operator tools (the seed) are not.
import type { BudgetName } from '../domain/budgets.js';
import type { RateLimiter } from '../limits/rateLimiter.js';

/** Takes a token of `budget` for `userId`, or fails with RATE_LIMITED. */
export type Charge = (budget: BudgetName, userId: number) => Promise<void>;

export const chargeTo =
  (limiter: RateLimiter): Charge =>
  (budget, userId) =>
    limiter.take(budget, { userId });

/** For operator tools acting on the service's behalf. */
export const free: Charge = async () => {};
