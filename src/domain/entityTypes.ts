// The registry of entity types: what relations are set on. Tally's own posts and the users it
// met, and the types a product owns in its own services (comments, videos, …) from the
// ENTITY_TYPES setting. Each type says which relation kinds apply to it and whether its
// entities have an owner user, whose counters those kinds move (a comment's author gets its
// likesReceived). Keys, events, facts and counters name an entity as (type, id) and read its
// rules here; nothing else decides what a type is.
import { POST, USER } from './entities.js';
import { BOOKMARK, FAV, FOLLOW, LIKE, type Relation, type RelationKinds, slotsSpec } from './relations.js';

export interface EntityTypeDef {
  /** Its name in keys, events and relation_facts.entity_type: snake_case, at most 32. */
  name: string;
  /** Its GraphQL (and Federation) type name: `comment` → Comment, `blog_post` → BlogPost. */
  typename: string;
  /** Who says its entities exist: Tally itself (the posts it stores, the users it met) or the product's own service. */
  source: 'tally' | 'owner';
  /** Whether an entity has an owner user (a post's author): the owner counters of its kinds move theirs. */
  owned: boolean;
  /** The kinds set on it, in registry order. */
  kinds: readonly Relation[];
  /** Whether it counts views (recordViews, recordEntityViews): ENTITY_TYPES' `views`. */
  views: boolean;
}

/** An owner type as the ENTITY_TYPES setting describes it. */
export interface OwnerTypeSpec {
  name: string;
  /** Its GraphQL type name when it is not the name in PascalCase (the owner's subgraph calls it so). */
  typename?: string;
  /** Kind groups: like, fav, bookmark, reactions (every reaction); and views. */
  kinds: readonly KindGroup[];
  owned: boolean;
}

/** What ENTITY_TYPES may give a type: a kind by its name, every reaction, or views. */
const REACTIONS_GROUP = 'reactions';
const VIEWS_GROUP = 'views';
const KIND_GROUPS: readonly string[] = [LIKE.name, FAV.name, BOOKMARK.name, REACTIONS_GROUP, VIEWS_GROUP];
export type KindGroup = string;
/** snake_case: a-z and 0-9 in parts joined by single underscores. */
const TYPE_NAME = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)*$/;
const TYPE_NAME_MAX = 32;
/** A GraphQL type name a product may choose: PascalCase letters and digits, at most 64. */
const TYPENAME = /^[A-Z][A-Za-z0-9]{0,63}$/;

export const typenameOf = (name: string) =>
  name
    .split('_')
    .filter((part) => part !== '')
    .map((part) => part[0]!.toUpperCase() + part.slice(1))
    .join('');

/**
 * Parses ENTITY_TYPES: `;`-separated `name[:kind,kind,…][:unowned]`, kinds among like, fav,
 * bookmark, reactions and views (all five when none are named); entities have an owner user
 * unless `unowned`. `comment;video:like,reactions,views:unowned`.
 */
export function parseEntityTypes(setting: string): OwnerTypeSpec[] {
  const specs = setting
    .split(';')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '')
    .map((entry): OwnerTypeSpec => {
      const [naming = '', kindList = '', ownership = '', ...rest] = entry.split(':').map((part) => part.trim());
      const [name = '', typename, ...moreNames] = naming.split('=').map((part) => part.trim());
      if (!TYPE_NAME.test(name) || name.length > TYPE_NAME_MAX || rest.length > 0 || moreNames.length > 0) {
        throw new Error(
          `"${entry}" is not name[=Typename][:kinds][:unowned] (a name is snake_case: a-z, 0-9 and single underscores, at most 32, starting with a letter)`,
        );
      }
      if (typename !== undefined && !TYPENAME.test(typename)) {
        throw new Error(`${name}: "${typename}" is not a type name (PascalCase letters and digits, at most 64)`);
      }
      if (name === POST || name === USER) throw new Error(`"${name}" is Tally's own type`);
      const kinds = kindList === '' ? [...KIND_GROUPS] : kindList.split(',').map((k) => k.trim());
      const unknown = kinds.filter((k) => !KIND_GROUPS.includes(k));
      if (unknown.length > 0) throw new Error(`${name}: unknown kinds ${unknown.join(', ')} (they are ${KIND_GROUPS.join(', ')})`);
      if (ownership !== '' && ownership !== 'unowned') throw new Error(`${name}: "${ownership}" is not "unowned"`);
      return {
        name,
        ...(typename === undefined ? {} : { typename }),
        kinds: KIND_GROUPS.filter((k) => kinds.includes(k)),
        owned: ownership !== 'unowned',
      };
    });
  const typenames = new Set(specs.map((spec) => spec.typename ?? typenameOf(spec.name)));
  if (typenames.size < specs.length) throw new Error('a type is listed twice (or two names give one GraphQL type name)');
  return specs;
}

/** The registry for a deployment's relation kinds and owner types. */
export function createEntityTypes(kinds: RelationKinds, ownerTypes: readonly OwnerTypeSpec[] = []) {
  const group = new Map<KindGroup, readonly Relation[]>([
    [LIKE.name, [LIKE]],
    [FAV.name, [FAV]],
    [BOOKMARK.name, [BOOKMARK]],
    [REACTIONS_GROUP, kinds.reactions],
  ]);
  const contentKinds = (groups: readonly KindGroup[]) => groups.flatMap((g) => group.get(g) ?? []);
  const all: readonly EntityTypeDef[] = [
    { name: POST, typename: 'Post', source: 'tally', owned: true, kinds: contentKinds(KIND_GROUPS), views: true },
    { name: USER, typename: 'User', source: 'tally', owned: true, kinds: [FOLLOW], views: false },
    ...ownerTypes.map(
      (spec): EntityTypeDef => ({
        name: spec.name,
        typename: spec.typename ?? typenameOf(spec.name),
        source: 'owner',
        owned: spec.owned,
        kinds: contentKinds(spec.kinds),
        views: spec.kinds.includes(VIEWS_GROUP),
      }),
    ),
  ];
  const byName = new Map(all.map((type) => [type.name, type]));
  const get = (name: string): EntityTypeDef => {
    const type = byName.get(name);
    if (!type) throw new Error(`no entity type "${name}" in this deployment`);
    return type;
  };
  const countedOn = (name: string) => get(name).kinds.filter((kind) => kind.slot !== null);
  const reactionsByType = new Map(all.map((type) => [type.name, type.kinds.filter((kind) => kind.reaction !== null)]));
  const owned = all.filter((type) => type.source === 'owner');

  return {
    all,
    /** The types a product's service owns, in the setting's order. */
    owned,
    /** Whether `name` is one of the types a product's service owns. */
    isOwned: (name: string): boolean => owned.some((type) => type.name === name),
    /** Whether this deployment has a type named `name` (an event's or a row's). */
    has: (name: string): boolean => byName.has(name),
    get,
    /** The kinds set on `type`, in registry order. */
    kindsOf: (name: string): readonly Relation[] => get(name).kinds,
    /** The kinds a packed counter of `type` counts, in slot order. */
    countedOn,
    /** The reactions set on `type`, in registry order (none for a type without reactions). */
    reactionsOf: (name: string): readonly Relation[] => reactionsByType.get(name) ?? [],
    /** The kinds counted on `type` and their slots as the Lua scripts take them ("like:1,fav:2"). */
    slotsSpec: (name: string) => slotsSpec(countedOn(name)),
    /** Types whose packed counters are folded from events (follows move user counters only). */
    eventCounted: new Set(
      all.filter((type) => type.kinds.some((kind) => kind.slot !== null)).map((type) => type.name),
    ) as ReadonlySet<string>,
    /** Types whose entities have packed counters: those folded from events and those counting views. */
    withCounters: new Set(
      all.filter((type) => type.views || type.kinds.some((kind) => kind.slot !== null)).map((type) => type.name),
    ) as ReadonlySet<string>,
  };
}

export type EntityTypes = ReturnType<typeof createEntityTypes>;
