// A user's own settings (today: whether their likes are public), charged to `writes`.
import type { UserModel, UserStore } from '../db/users.js';
import type { Charge } from './charges.js';

export interface ProfileChanges {
  /** Whether others may list the posts this user liked and favourited, and see them as a liker. */
  likesPublic?: boolean | null;
}

export function createProfileService(deps: { users: UserStore; charge: Charge }) {
  return {
    async update(userId: number, changes: ProfileChanges): Promise<UserModel> {
      await deps.charge('writes', userId);
      return deps.users.updateProfile(userId, { ...(changes.likesPublic != null && { likesPublic: changes.likesPublic }) });
    },
  };
}

export type ProfileService = ReturnType<typeof createProfileService>;
