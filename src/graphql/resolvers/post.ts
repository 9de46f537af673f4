import { type PostCounts as Counts, countOf } from '../../counters/postCounters.js';
import { VIEW_SLOTS } from '../../domain/counters.js';
import { type EntityRef, POST } from '../../domain/entities.js';
import { KINDS, TYPES } from '../../domain/kinds.js';
import { BOOKMARK, FAV, LIKE, POST_RELATIONS, type Relation } from '../../domain/relations.js';
import { notFound } from '../../errors.js';
import { NOTHING_HELD, type ViewerState } from '../../relations/relationStore.js';
import type { GraphQLContext } from '../context.js';
import type { PostCountsResolvers, PostResolvers, PostViewerStateResolvers, ViewCountsResolvers } from '../generated.js';
import type { PageState, PostModel, ReactionGroupModel } from '../models.js';
import { subfieldsOf } from '../selection.js';
import { listPage } from './lists.js';
import { reactionNamed } from './reactions.js';

/** Who set `relation` on the entity, with likers' privacy: a private user shows only to themselves. */
export function settersOf(
  entity: EntityRef,
  relation: Relation,
  list: string,
  first: number | null | undefined,
  after: string | null | undefined,
  ctx: GraphQLContext,
) {
  // A post's cursors stay as they were; another type's name its type.
  const of = entity.type === POST ? `${entity.id}` : `${entity.type}:${entity.id}`;
  return listPage(ctx, {
    list: `${list}:${relation.name}:${of}`,
    first,
    after,
    scan: (limit, from) =>
      ctx.deps.lists.usersOf(entity.type, entity.id, relation.name, limit, from, { privateExceptFor: ctx.viewer?.id ?? null }),
    load: (ids) => ctx.loaders.user.loadMany(ids),
    // Checked again on the loaded user: one who turned private since the scan stays hidden.
    keep: (user) => ctx.deps.visibility.likesVisibleTo(user, ctx.viewer?.id ?? null),
  });
}

export const Post: PostResolvers = {
  id: (post) => String(post.id),
  // Feed pages come with their authors, answered without a promise; access checks still load
  // users fresh (User.likedPosts).
  author: (post, _, { loaders, deps }) =>
    post.author ??
    loaders.user.load(post.authorId).then((author) => {
      if (author) return author;
      // The author's erasure began while this request ran: the post is gone with them.
      if (deps.erasedUsers.has(post.authorId)) throw notFound(`post ${post.id} not found`);
      // A post row always references its author (foreign key); any other miss means a broken store.
      throw new Error(`author ${post.authorId} of post ${post.id} is missing`);
    }),
  // A pushed post carries its counts, resolved once for every socket that watches it.
  counts: (post, _, { loaders }) => countsOf(post, loaders),
  // The views are slots of the same packed counters: one read, one asOf.
  views: (post, _, { loaders }) => countsOf(post, loaders),
  myState: (post, _, { viewer, loaders }, info) => {
    if (!viewer) return null;
    const kinds = kindsShown(info);
    return stateFromPage(post.page, kinds) ?? loaders.viewerState.load({ entity: { type: POST, id: post.id }, kinds });
  },

  likers: (post, { kind, first, after }, ctx) =>
    settersOf({ type: POST, id: post.id }, POST_RELATIONS[kind ?? 'LIKE'], 'likers', first, after, ctx),
  reactors: (post, { content, first, after }, ctx) =>
    settersOf({ type: POST, id: post.id }, reactionNamed(content), 'reactors', first, after, ctx),

  reactionGroups: (post, _, ctx) => reactionGroupsOf({ type: POST, id: post.id }, countsOf(post, ctx.loaders), ctx, post.page),
};

// What the post's page loaded, else a load of its own. An error the page's load met is the
// field's answer, rejected as a load's would be (graphql-js then reports it beside its
// siblings' errors, as it does for loads, where a throw would stop the list at the first).
const found = <T>(value: T | Error | undefined): T | Promise<never> | undefined => (value instanceof Error ? Promise.reject(value) : value);

const countsOf = (post: PostModel, loaders: GraphQLContext['loaders']) =>
  post.liveCounts ?? found(post.page?.counts) ?? loaders.counts.load({ type: POST, id: post.id });

/** The viewer's state its page loaded for a post, if that covers every kind of `kinds`. */
function stateFromPage(page: PageState | undefined, kinds: readonly Relation[]): ViewerState | Promise<never> | undefined {
  return page && kinds.every((kind) => page.kinds.has(kind)) ? found(page.viewerState) : undefined;
}

/**
 * An entity's reaction groups, in registry order: every reaction its type takes whose count is
 * above zero or that the viewer holds. Both loads are made in this tick, so they join the
 * page's batches (one round trip); a post handed its page's counts and state answers at once.
 */
export function reactionGroupsOf(
  entity: EntityRef,
  counts: Counts | Promise<Counts>,
  { viewer, loaders }: GraphQLContext,
  page?: PageState,
): ReactionGroupModel[] | Promise<ReactionGroupModel[]> {
  const reactions = TYPES.reactionsOf(entity.type);
  if (reactions.length === 0) return [];
  const held = viewer ? (stateFromPage(page, reactions) ?? loaders.viewerState.load({ entity, kinds: reactions })) : NOTHING_HELD;
  if (!(counts instanceof Promise) && !(held instanceof Promise)) return groupsOf(reactions, counts, held);
  return Promise.all([counts, held]).then(([loaded, state]) => groupsOf(reactions, loaded, state));
}

// A feed page builds these for every post: one pass, no intermediate arrays, plain fields (no
// resolver call per group).
function groupsOf(reactions: readonly Relation[], counts: Counts, held: ViewerState): ReactionGroupModel[] {
  const groups: ReactionGroupModel[] = [];
  for (const kind of reactions) {
    const count = countOf(counts, kind);
    const viewerHasReacted = held.has(kind.name);
    const { content, emoji } = kind.reaction!;
    if (count > 0 || viewerHasReacted) groups.push({ content, emoji, count, viewerHasReacted });
  }
  return groups;
}

// The counts and viewer state hold every kind; these fields are the like's and the favourite's.
export const PostCounts: PostCountsResolvers = {
  likes: (counts) => countOf(counts, LIKE),
  favs: (counts) => countOf(counts, FAV),
};

export const ViewCounts: ViewCountsResolvers = {
  total: (counts) => counts.slots[VIEW_SLOTS.total] ?? 0,
  unique: (counts) => counts.slots[VIEW_SLOTS.unique] ?? 0,
};

/** The kinds each field of PostViewerState reads (kept beside its resolvers). */
const KINDS_OF_FIELD: Record<string, readonly Relation[]> = {
  liked: [LIKE],
  faved: [FAV],
  reactions: KINDS.reactions,
  bookmarked: [BOOKMARK],
};

const kindsOfSelection = new WeakMap<ReadonlySet<string>, readonly Relation[]>();

/** The kinds a `myState` selection shows, in registry order. */
export function kindsShown(info: Parameters<typeof subfieldsOf>[0]): readonly Relation[] {
  const fields = subfieldsOf(info);
  let kinds = kindsOfSelection.get(fields);
  if (!kinds) {
    kinds = KINDS.all.filter((kind) => [...fields].some((field) => KINDS_OF_FIELD[field]?.includes(kind)));
    kindsOfSelection.set(fields, kinds);
  }
  return kinds;
}

export const PostViewerState: PostViewerStateResolvers = {
  liked: (state) => state.has(LIKE.name),
  faved: (state) => state.has(FAV.name),
  reactions: (state) => KINDS.reactions.filter((kind) => state.has(kind.name)).map((kind) => kind.reaction!.content),
  bookmarked: (state) => state.has(BOOKMARK.name),
};
