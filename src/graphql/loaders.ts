// Per-request DataLoaders: every resolver of one request that needs a user, a post, counts
// or the viewer's state joins one batch, so a page costs one SQL query per kind of row and
// one Redis round trip for counts and viewer state together, whatever its size.
import DataLoader from 'dataloader';
import type { Viewer } from '../auth/jwt.js';
import type { PostCounts } from '../counters/postCounters.js';
import type { UserCounts } from '../counters/userCounters.js';
import type { Client } from '../limits/rateLimiter.js';
import type { ViewerState } from '../relations/relationStore.js';
import type { ApiDeps } from './apiDeps.js';
import type { PostModel, UserModel } from './models.js';

/** Orders `rows` like `ids`, with null for ids that have no row (DataLoader's contract). */
export function inKeyOrder<T extends { id: number }>(ids: readonly number[], rows: readonly T[]): (T | null)[] {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => byId.get(id) ?? null);
}

/**
 * Redis's answers, with the ones it could not give (null: it lost those facts and has not
 * restored them yet) asked of PostgreSQL, in one query for all of them.
 */
export async function orFromPostgres<T>(
  ids: readonly number[],
  answers: readonly (T | null)[],
  durable: (ids: number[]) => Promise<T[]>,
): Promise<T[]> {
  const missing = ids.filter((_, i) => answers[i] === null);
  if (missing.length === 0) return answers as T[];
  const found = await durable(missing);
  let next = 0;
  return answers.map((answer) => answer ?? found[next++]!);
}

/** An anonymous viewer's state on any post. */
export const NOTHING_HELD: ViewerState = new Set();

/**
 * `cache: false` for a subscription: its context lives as long as the socket, and each push
 * must read fresh (loads of one push still share a batch).
 */

export function createLoaders(deps: ApiDeps, viewer: Viewer | null, client: Client, { cache = true } = {}) {
  let listPages = 0;
  return {
    /**
     * Resolves when one more list page may be read: the pages a request asks for in one tick
     * (a page of posts, each with its likers) take their tokens in one call.
     */
    listPageToken: new DataLoader<number, null>((pages) => deps.rateLimiter.takeEach('listPages', client, pages.length), {
      cache: false,
    }),
    /** A key for `listPageToken` (each list page takes its own token). */
    nextListPage: () => ++listPages,
    /** Users a client may see: one whose erasure started loads as null (their row goes in the background). */
    user: new DataLoader<number, UserModel | null>(async (ids) => inKeyOrder(ids, deps.visibility.users(await deps.users.byIds(ids))), {
      cache,
    }),
    /** Posts a client may see: a deleted one, or one of an erased author, loads as null. */
    post: new DataLoader<number, PostModel | null>(async (ids) => inKeyOrder(ids, deps.visibility.posts(await deps.posts.liveByIds(ids))), {
      cache,
    }),
    counts: new DataLoader<number, PostCounts>(
      async (postIds) => orFromPostgres(postIds, await deps.postCounters.load(postIds), (ids) => deps.durableReads.counts(ids)),
      { cache },
    ),
    userCounts: new DataLoader<number, UserCounts>((userIds) => deps.userCounters.load(userIds), { cache }),
    /** Whether the viewer follows each user (false for anonymous viewers). */
    followedByViewer: new DataLoader<number, boolean>(
      async (userIds) => {
        if (!viewer) return userIds.map(() => false);
        const follows = await deps.relations.follows(viewer.id, userIds);
        return orFromPostgres(userIds, follows, (ids) => deps.durableReads.follows(viewer.id, ids));
      },
      { cache },
    ),
    /** The viewer's own state; never cached beyond this request. */
    viewerState: new DataLoader<number, ViewerState>(
      async (postIds) => {
        if (!viewer) return postIds.map(() => NOTHING_HELD);
        const states = await deps.relations.viewerStates(viewer.id, postIds);
        return orFromPostgres(postIds, states, (ids) => deps.durableReads.viewerStates(viewer.id, ids));
      },
      { cache },
    ),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
