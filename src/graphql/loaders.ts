// Per-request DataLoaders: every resolver of one request that needs a user or a post joins
// one batch, so a page costs one SQL query per kind of row, whatever its size.
import DataLoader from 'dataloader';
import type { Services } from './services.js';
import type { PostModel, UserModel } from './models.js';

/** Orders `rows` like `ids`, with null for ids that have no row (DataLoader's contract). */
export function inKeyOrder<T extends { id: number }>(ids: readonly number[], rows: readonly T[]): (T | null)[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
}

export function createLoaders(services: Services) {
  return {
    user: new DataLoader<number, UserModel | null>(async (ids) => inKeyOrder(ids, await services.users.byIds(ids))),
    /** Live posts only: a deleted post loads as null. */
    post: new DataLoader<number, PostModel | null>(async (ids) =>
      inKeyOrder(ids, await services.posts.liveByIds(ids)),
    ),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
