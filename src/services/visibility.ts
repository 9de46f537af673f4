// What a client may see of an entity, decided here and nowhere else: every path that shows or
// changes one (queries, lists, loaders, mutations, live pushes) asks this module. A post is
// visible while it exists, is not deleted (the stores and caches return live posts only) and
// its author's erasure has not started; a user while their erasure has not started. Whose
// likes and favourites others may see is the owner's `likesPublic`.
import type { ErasedUsers } from './erasedUsers.js';

export function createVisibility(deps: { erasedUsers: Pick<ErasedUsers, 'has'> }) {
  const { erasedUsers } = deps;
  const postVisible = (post: { authorId: number }) => !erasedUsers.has(post.authorId);
  const userVisible = (user: { id: number }) => !erasedUsers.has(user.id);

  return {
    /** The live post if a client may see it, else null. */
    post: <T extends { authorId: number }>(post: T | null | undefined): T | null => (post && postVisible(post) ? post : null),
    /** The posts a client may see, in their order. */
    posts: <T extends { authorId: number }>(posts: readonly T[]): T[] => posts.filter(postVisible),
    /** The user if a client may see them, else null. */
    user: <T extends { id: number }>(user: T | null | undefined): T | null => (user && userVisible(user) ? user : null),
    /** The users a client may see, in their order. */
    users: <T extends { id: number }>(users: readonly T[]): T[] => users.filter(userVisible),
    /** Whether `viewerId` (null: anonymous) may see which posts `owner` liked or favourited. */
    likesVisibleTo: (owner: { id: number; likesPublic: boolean }, viewerId: number | null): boolean =>
      owner.likesPublic || owner.id === viewerId,
  };
}

export type Visibility = ReturnType<typeof createVisibility>;
