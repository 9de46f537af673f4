// The relations a user sets: a like or a favourite on a post, a follow of a user. Each is a
// set of user ids per entity in Redis (named by the relation), an event when it changes, a
// row of relation_facts (its `kind` column), and counters it moves: one slot of the entity's
// packed counters, and user counters (the rule lives here, once).
import { POST_SLOTS, type UserCounter } from './counters.js';
import { type EntityType, POST, USER } from './entities.js';

export interface Relation {
  /** Its name in keys, events and relation_facts.kind. */
  name: 'like' | 'fav' | 'follow';
  /** What it is set on. */
  on: EntityType;
  /** The entity's counter slot its events move (follows move none: the slot only fills the event format). */
  slot: number;
  /** The user counter of the entity's owner (a post's author, the followed user) it moves. */
  ownerCounter: UserCounter;
  /** The user counter of whoever sets it, if any. */
  userCounter: UserCounter | null;
}

export const LIKE: Relation = { name: 'like', on: POST, slot: POST_SLOTS.like, ownerCounter: 'likesReceived', userCounter: null };
export const FAV: Relation = { name: 'fav', on: POST, slot: POST_SLOTS.fav, ownerCounter: 'favsReceived', userCounter: null };
export const FOLLOW: Relation = { name: 'follow', on: USER, slot: POST_SLOTS.like, ownerCounter: 'followers', userCounter: 'followings' };

export const RELATIONS = [LIKE, FAV, FOLLOW] as const;

/** The relations a viewer sets on a post, by their GraphQL enum value. */
export type PostRelationKind = 'LIKE' | 'FAV';
export const POST_RELATIONS: Record<PostRelationKind, Relation> = { LIKE, FAV };

/** The relation named `name` (an event's or a row's), or undefined for a name Tally does not write. */
export const relationNamed = (name: string): Relation | undefined => RELATIONS.find((r) => r.name === name);

/** The post relations and their slots as the Lua scripts take them ("like:1,fav:2"). */
export const POST_RELATION_SLOTS = [LIKE, FAV].map((r) => `${r.name}:${r.slot}`).join(',');

/**
 * The user counters a change of `relation` moves, by whom: `owner` is the entity's owner (a
 * post's author, the followed user), `user` whoever set it.
 */
export function userCounterChanges(relation: Relation, owner: number, user: number, by: 1 | -1): [number, UserCounter, number][] {
  const changes: [number, UserCounter, number][] = [[owner, relation.ownerCounter, by]];
  if (relation.userCounter) changes.push([user, relation.userCounter, by]);
  return changes;
}
