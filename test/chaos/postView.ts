// What the checks read of a post over GraphQL, and how it maps onto the truth's facts: one
// selection and one reading, so the checks, the asOf sampler and the AOF reader agree on it.
import { type FactKey, factKey, KINDS, type Kind, REACTIONS } from './truth.js';

/** Counts of every kind: likes and favs, and each reaction's group (absent: count 0). */
export const COUNTS_FIELDS = 'counts { likes favs asOf } reactionGroups { content count viewerHasReacted }';
export const MY_STATE_FIELDS = 'myState { liked faved reactions }';

export interface PostView {
  id: string;
  counts: { likes: number; favs: number; asOf: string | null };
  reactionGroups: { content: string; count: number; viewerHasReacted: boolean }[];
  myState?: { liked: boolean; faved: boolean; reactions: string[] } | null;
}

export interface PostCounts {
  byKind: Map<Kind, number>;
  asOf: number | null;
}

/** Every kind's count (KINDS is the whole registry: every content the API can count). */
export function countsOf(view: PostView): PostCounts {
  const byKind = new Map<Kind, number>([
    ['LIKE', view.counts.likes],
    ['FAV', view.counts.favs],
  ]);
  for (const kind of REACTIONS) byKind.set(kind, 0);
  for (const group of view.reactionGroups) byKind.set(group.content, group.count);
  return { byKind, asOf: view.counts.asOf === null ? null : Date.parse(view.counts.asOf) };
}

/**
 * The viewer's facts on the post as myState tells them, and the reaction facts the post shows
 * otherwise: `viewerHasReacted` differs (both are always current, and a held reaction's group
 * is always listed), a group listed with count 0 that the viewer does not hold, or a list out
 * of registry order (then every reaction of the list).
 */
export function heldOf(user: number, view: PostView): { held: Map<FactKey, boolean>; misshown: FactKey[] } {
  const post = Number(view.id);
  const state = view.myState!;
  const reactions = new Set(state.reactions);
  const held = new Map<FactKey, boolean>();
  for (const kind of KINDS) held.set(factKey(user, post, kind), reactions.has(kind));
  held.set(factKey(user, post, 'LIKE'), state.liked);
  held.set(factKey(user, post, 'FAV'), state.faved);
  const groups = new Map(view.reactionGroups.map((g) => [g.content, g]));
  const inOrder = (list: string[]) => list.join() === REACTIONS.filter((kind) => list.includes(kind)).join();
  const misordered = !inOrder(state.reactions) || !inOrder([...groups.keys()]);
  const misshown = REACTIONS.filter((kind) => {
    const group = groups.get(kind);
    if (misordered && (reactions.has(kind) || group)) return true;
    if (group && group.count === 0 && !reactions.has(kind)) return true;
    return (group?.viewerHasReacted ?? false) !== reactions.has(kind);
  });
  return { held, misshown: misshown.map((kind) => factKey(user, post, kind)) };
}
