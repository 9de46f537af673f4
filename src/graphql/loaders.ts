// Per-request DataLoaders: every resolver of one request that needs a user, a post, counts
// or the viewer's state joins one batch, so a page costs one SQL query per kind of row and
// one Redis round trip for counts and viewer state together, whatever its size.
import DataLoader from 'dataloader';
import type { Viewer } from '../auth/jwt.js';
import type { PostCounts } from '../counters/postCounters.js';
import type { UserCounts } from '../counters/userCounters.js';
import type { Relation } from '../domain/relations.js';
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

/** The viewer's state on a post, as far as some kinds go (a field that shows `liked` asks for the like). */
export interface ViewerStateKey {
  postId: number;
  kinds: readonly Relation[];
}

/**
 * The viewer's state per (post, kinds): one call for the batch, on every post asked and the
 * union of the kinds asked (each kind costs Redis a lookup per post, so a page that shows
 * `liked` alone asks about the like alone). A post's state may hold more kinds than its key asked.
 */
function viewerStateLoader(deps: ApiDeps, viewer: Viewer | null, cache: boolean) {
  return new DataLoader<ViewerStateKey, ViewerState, string>(
    async (keys) => {
      const asked = new Set(keys.flatMap((key) => key.kinds));
      if (!viewer || asked.size === 0) return keys.map(() => NOTHING_HELD);
      const postIds = [...new Set(keys.map((key) => key.postId))];
      const states = await deps.relations.viewerStates(viewer.id, postIds, [...asked]);
      const answers = await orFromPostgres(postIds, states, (ids) => deps.durableReads.viewerStates(viewer.id, ids));
      const byPost = new Map(postIds.map((id, i) => [id, answers[i]!]));
      return keys.map((key) => byPost.get(key.postId)!);
    },
    { cache, cacheKeyFn: (key) => `${key.postId}:${key.kinds.map((kind) => kind.name).join(',')}` },
  );
}

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
    /** The viewer's own state; never cached beyond this request (a change clears it all). */
    viewerState: viewerStateLoader(deps, viewer, cache),
  };
}

export type Loaders = ReturnType<typeof createLoaders>;
