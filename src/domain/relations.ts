// The registry of relation kinds: every relation a user sets on an entity (a like, a
// favourite, a follow, a reaction) is an entry here, and everything else reads its rules from
// it. A kind is a set of user ids per entity in Redis (named by the kind), an event when it
// changes, a row of relation_facts (its `kind` column) and the counters it moves: one slot of
// the entity's packed counters, and user counters. Adding a kind is one entry (docs/api.md
// shows how); reactions come from the REACTIONS setting.
import { MAX_COUNTER_SLOTS, POST_SLOTS, type UserCounter } from './counters.js';

/** Who may see who set a relation (the counts are public either way). */
export type Listed =
  /** Listed to everyone (follows). */
  | 'public'
  /** Listed to others only while the setter's `likesPublic` is on; always to the setter. */
  | 'likesPublic'
  /** Listed to no one but the setter, and never counted or pushed (bookmarks). */
  | 'setterOnly';

export interface Reaction {
  /** Its name in the API (`content`): THUMBS_UP. */
  content: string;
  emoji: string;
}

export interface Relation {
  /** Its name in keys, events and relation_facts.kind: letters, digits and '_', at most 16. */
  name: string;
  /** The entity's counter slot its events move; null when no packed counter counts it (follows move user counters only). */
  slot: number | null;
  /** The user counter of the entity's owner (a post's author, the followed user) it moves, if any. */
  ownerCounter: UserCounter | null;
  /** The user counter of whoever sets it, if any. */
  setterCounter: UserCounter | null;
  listed: Listed;
  /** Its group: a reaction, offered among a post's reactionGroups. */
  reaction: Reaction | null;
}

export const LIKE: Relation = {
  name: 'like',
  slot: POST_SLOTS.like,
  ownerCounter: 'likesReceived',
  setterCounter: null,
  listed: 'likesPublic',
  reaction: null,
};
export const FAV: Relation = { ...LIKE, name: 'fav', slot: POST_SLOTS.fav, ownerCounter: 'favsReceived' };
export const FOLLOW: Relation = {
  name: 'follow',
  slot: null,
  ownerCounter: 'followers',
  setterCounter: 'followings',
  listed: 'public',
  reaction: null,
};

/** A private "save for later": no counter, no one's list but the setter's. */
export const BOOKMARK: Relation = {
  name: 'bookmark',
  slot: null,
  ownerCounter: null,
  setterCounter: null,
  listed: 'setterOnly',
  reaction: null,
};

/** The relations a viewer sets on a post through setLikeRelation, by their GraphQL enum value. */
export type PostRelationKind = 'LIKE' | 'FAV';
export const POST_RELATIONS: Record<PostRelationKind, Relation> = { LIKE, FAV };

/** GitHub's eight reactions, the default of REACTIONS. */
export const DEFAULT_REACTIONS: readonly Reaction[] = [
  { content: 'THUMBS_UP', emoji: '👍' },
  { content: 'THUMBS_DOWN', emoji: '👎' },
  { content: 'LAUGH', emoji: '😄' },
  { content: 'HOORAY', emoji: '🎉' },
  { content: 'CONFUSED', emoji: '😕' },
  { content: 'HEART', emoji: '❤️' },
  { content: 'ROCKET', emoji: '🚀' },
  { content: 'EYES', emoji: '👀' },
];

/** The first counter slot after a post's own: reactions take it and the ones after, in registry order. */
const FIRST_REACTION_SLOT = Object.keys(POST_SLOTS).length;
/** Reactions take the slots packed counters have left. */
export const MAX_REACTIONS = MAX_COUNTER_SLOTS - FIRST_REACTION_SLOT;
const CONTENT = /^[A-Z][A-Z0-9_]{0,13}$/;

/**
 * Parses the REACTIONS setting: `CONTENT:emoji` pairs, comma-separated, in the order clients
 * show them. Each content's counter slot is its position, so a deployment may only add
 * kinds at the end (the deployment check refuses a reordered list).
 */
export function parseReactions(setting: string): Reaction[] {
  const reactions = setting.split(',').map((pair) => {
    const [content = '', emoji = '', ...rest] = pair.trim().split(':');
    if (!CONTENT.test(content) || emoji.trim() === '' || emoji.length > 16 || rest.length > 0)
      throw new Error(`"${pair.trim()}" is not CONTENT:emoji (CONTENT is A-Z, 0-9 and _, at most 14, starting with a letter)`);
    return { content, emoji: emoji.trim() };
  });
  if (reactions.length > MAX_REACTIONS) throw new Error(`at most ${MAX_REACTIONS} reactions`);
  const contents = new Set(reactions.map((r) => r.content));
  if (contents.size < reactions.length) throw new Error('a content is listed twice');
  return reactions;
}

/** Counted kinds and their slots as the Lua scripts take them: "like:1,fav:2". */
export const slotsSpec = (kinds: readonly Relation[]) => kinds.map((kind) => `${kind.name}:${kind.slot}`).join(',');

export interface KindRules {
  /** Each user holds at most one reaction on an entity: setting one removes the other (REACTIONS_PER_USER=one). */
  oneReactionPerUser: boolean;
}

/** The registry for a deployment's reactions and rules. */
export function createRelationKinds(reactions: readonly Reaction[], rules: KindRules = { oneReactionPerUser: false }) {
  const reactionKinds: Relation[] = reactions.map((reaction, i) => ({
    ...LIKE,
    name: `r_${reaction.content.toLowerCase()}`,
    slot: FIRST_REACTION_SLOT + i,
    ownerCounter: null,
    reaction,
  }));
  const all: readonly Relation[] = [LIKE, FAV, FOLLOW, BOOKMARK, ...reactionKinds];
  const byName = new Map(all.map((kind) => [kind.name, kind]));
  const byContent = new Map(reactionKinds.map((kind) => [kind.reaction!.content, kind]));
  return {
    all,
    /** The reactions, in the order clients show them. */
    reactions: reactionKinds,
    /** The kind named `name` (an event's or a row's), or undefined for a name this registry does not hold. */
    named: (name: string): Relation | undefined => byName.get(name),
    /** The reaction whose content is `content`, or undefined. */
    reaction: (content: string): Relation | undefined => byContent.get(content),
    /** The kinds that setting `kind` removes in the same step (the other reactions, with one per user). */
    exclusiveWith: (kind: Relation): readonly Relation[] =>
      rules.oneReactionPerUser && kind.reaction ? reactionKinds.filter((other) => other !== kind) : [],
  };
}

export type RelationKinds = ReturnType<typeof createRelationKinds>;

/** The owner id of an entity that has none (an `unowned` type's, one whose owner was erased). */
export const NO_OWNER = 0;

/**
 * The user counters a change of `relation` moves, by whom: `owner` is the entity's owner (a
 * post's author, the followed user; NO_OWNER for none), `user` whoever set it.
 */
export function userCounterChanges(relation: Relation, owner: number, user: number, by: 1 | -1): [number, UserCounter, number][] {
  const changes: [number, UserCounter, number][] = [];
  if (relation.ownerCounter && owner !== NO_OWNER) changes.push([owner, relation.ownerCounter, by]);
  if (relation.setterCounter) changes.push([user, relation.setterCounter, by]);
  return changes;
}
