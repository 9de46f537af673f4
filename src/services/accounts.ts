// A person leaving: `erase` records the erasure (once), makes every process treat the user as
// gone at once (their token stops working, their sockets close), and queues the bounded
// background batches that undo their likes, favourites and follows through the normal write
// path and then delete their rows (src/services/eraser.ts).
import type { ErasureRow, ErasureStateName, ErasureStore } from '../db/erasures.js';
import type { UserStore } from '../db/users.js';
import { badInput } from '../errors.js';
import type { Charge } from './charges.js';
import type { ErasedUsers } from './erasedUsers.js';

export interface AccountServiceDeps {
  erasures: ErasureStore;
  erasedUsers: ErasedUsers;
  users: UserStore;
  /** Queues the erasure's batches (BullMQ). */
  requestErasure: (userId: number) => Promise<void>;
  charge: Charge;
}

export function createAccountService(deps: AccountServiceDeps) {
  /** Starts (or finds) the erasure; returns at once. */
  async function start(userId: number): Promise<{ userId: number; state: ErasureStateName; started: boolean }> {
    const { row, started } = await deps.erasures.start(userId);
    // A retry of an erasure this process already knows of announces nothing new.
    if (started || !deps.erasedUsers.has(userId)) await deps.erasedUsers.announce(userId);
    deps.users.forget(userId);
    if (row.state === 'ERASING') await deps.requestErasure(userId);
    return { userId, state: row.state, started };
  }

  return {
    /**
     * The viewer erases their own account: `confirm` must be their id (BAD_USER_INPUT
     * otherwise). Each call, retries included, takes a `writes` token.
     */
    async erase(userId: number, input: { confirm: string }): Promise<{ userId: number; state: ErasureStateName }> {
      if (input.confirm !== String(userId)) {
        throw badInput('confirm must be your own user id: erasing an account cannot be undone', { argumentName: 'confirm' });
      }
      await deps.charge('writes', userId);
      const { state } = await start(userId);
      return { userId, state };
    },

    /** An operator erases a user (npm run erase): no confirmation, the same erasure. */
    eraseAsOperator: start,

    status: (userId: number): Promise<ErasureRow | null> => deps.erasures.get(userId),
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
