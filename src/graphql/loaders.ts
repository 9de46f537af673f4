// Per-request DataLoaders: every resolver of one request that needs a user, a post, counts
// or the viewer's state joins one batch, so a page costs one SQL query per kind of row and
// one Redis round trip for counts and viewer state together, whatever its size.
import DataLoader from 'dataloader';
import type { Viewer } from '../auth/jwt.js';
import type { PostCounts } from '../counters/postCounters.js';
import type { UserCounts } from '../counters/userCounters.js';
import type { OwnedEntity } from '../db/entities.js';
import { type EntityRef, entityName } from '../domain/entities.js';
import type { Relation } from '../domain/relations.js';
import type { Client } from '../limits/rateLimiter.js';
import { NOTHING_HELD, type ViewerState } from '../relations/relationStore.js';
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

/** The viewer's state on an entity, as far as some kinds go (a field that shows `liked` asks for the like). */
export interface ViewerStateKey {
  entity: EntityRef;
  kinds: readonly Relation[];
}

// The kinds of a key are one of a few shared lists (a selection's, a type's reactions): each is
// spelled once, not once per entity of a page.
const kindsKeys = new WeakMap<readonly Relation[], string>();
function kindsKey(kinds: readonly Relation[]): string {
  let key = kindsKeys.get(kinds);
  if (key === undefined) {
    key = kinds.map((kind) => kind.name).join(',');
    kindsKeys.set(kinds, key);
  }
  return key;
}

/**
 * The viewer's state per (entity, kinds): one call per entity type in the batch, on every
 * entity asked and the union of the kinds asked (each kind costs Redis a lookup per entity,
 * so a page that shows `liked` alone asks about the like alone). An entity's state may hold
 * more kinds than its key asked.
 */
function viewerStateLoader(deps: ApiDeps, viewer: Viewer | null, cache: boolean) {
  async function statesOf(userId: number, type: string, keys: readonly ViewerStateKey[]): Promise<Map<number, ViewerState>> {
    // Keys share a few kinds lists: their union, not every key's kinds one by one.
    const asked = [...new Set([...new Set(keys.map((key) => key.kinds))].flat())];
    const ids = [...new Set(keys.map((key) => key.entity.id))];
    if (asked.length === 0) return new Map(ids.map((id) => [id, NOTHING_HELD]));
    const states = await deps.relations.viewerStates(userId, ids, asked, type);
    const answers = await orFromPostgres(ids, states, (missing) => deps.durableReads.viewerStates(userId, missing, type));
    return new Map(ids.map((id, i) => [id, answers[i]!]));
  }
  return new DataLoader<ViewerStateKey, ViewerState, string>(
    async (keys) => {
      if (!viewer) return keys.map(() => NOTHING_HELD);
      const types = [...new Set(keys.map((key) => key.entity.type))];
      const byType = new Map(
        await Promise.all(
          types.map(
            async (type) =>
              [
                type,
                await statesOf(
                  viewer.id,
                  type,
                  keys.filter((k) => k.entity.type === type),
                ),
              ] as const,
          ),
        ),
      );
      return keys.map((key) => byType.get(key.entity.type)!.get(key.entity.id)!);
    },
    { cache, cacheKeyFn: (key) => `${entityName(key.entity)}:${kindsKey(key.kinds)}` },
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
    /** Counts of posts and of entities of any other counted type, in one MGET per command group. */
    counts: new DataLoader<EntityRef, PostCounts, string>(
      async (entities) => {
        const answers = await deps.postCounters.loadEntities(entities);
        const types = [...new Set(entities.filter((_, i) => answers[i] === null).map((entity) => entity.type))];
        // What Redis cannot answer yet (lost, not restored) is asked of PostgreSQL, per type.
        const durable = new Map<string, PostCounts>();
        for (const type of types) {
          const ids = entities.filter((entity, i) => entity.type === type && answers[i] === null).map((entity) => entity.id);
          const found = await deps.durableReads.counts(ids, type);
          ids.forEach((id, k) => {
            durable.set(entityName({ type, id }), found[k]!);
          });
        }
        return entities.map((entity, i) => answers[i] ?? durable.get(entityName(entity))!);
      },
      { cache, cacheKeyFn: entityName },
    ),
    userCounts: new DataLoader<number, UserCounts>((userIds) => deps.userCounters.load(userIds), { cache }),
    /** Entities a product owns, by the owner's (type, key): null for one not registered or deleted. */
    ownedEntity: new DataLoader<{ type: string; key: string }, OwnedEntity | null, string>(
      async (refs) => {
        const types = [...new Set(refs.map((ref) => ref.type))];
        const found = (
          await Promise.all(
            types.map((type) =>
              deps.entities.liveByKeys(
                type,
                refs.filter((r) => r.type === type).map((r) => r.key),
              ),
            ),
          )
        ).flat();
        const byName = new Map(found.map((entity) => [`${entity.type}:${entity.key}`, entity]));
        return refs.map((ref) => byName.get(`${ref.type}:${ref.key}`) ?? null);
      },
      { cache, cacheKeyFn: (ref) => `${ref.type}:${ref.key}` },
    ),
    /** The same, by Tally's id (a list's rows name them so): null for one deleted. */
    ownedEntityById: new DataLoader<number, OwnedEntity | null>(
      async (ids) => {
        const byId = new Map((await deps.entities.liveByIds(ids)).map((entity) => [entity.id, entity]));
        return ids.map((id) => byId.get(id) ?? null);
      },
      { cache },
    ),
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
