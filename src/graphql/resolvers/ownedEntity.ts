// The object types of the entities a product's own service owns (ENTITY_TYPES), built from the
// registry: one per type, implementing OwnedEntity, with the fields Post has for counts,
// viewer state and reactions, answered through the same loaders (one round trip per page).
import type { PostCounts } from '../../counters/postCounters.js';
import type { OwnedEntity } from '../../db/entities.js';
import { TYPES } from '../../domain/kinds.js';
import { POST_RELATIONS, type PostRelationKind } from '../../domain/relations.js';
import { kindTakenBy } from '../../services/entities.js';
import type { GraphQLContext } from '../context.js';
import { kindsShown, reactionGroupsOf, settersOf } from './post.js';
import { reactionNamed } from './reactions.js';

/** The SDL of every owner type (appended to schema.graphql). */
export function ownerTypeDefs(): string {
  return TYPES.owned
    .map(
      (type) => `
"A ${type.name} the product's own service owns (ENTITY_TYPES): Tally's fields."
type ${type.typename} implements OwnedEntity {
  "The owner's id of it."
  id: ID!
  "Its counts (a kind a ${type.name} does not take reads 0)."
  counts: PostCounts!
  "The viewer's own relations to it; null without a token."
  myState: PostViewerState
  "Its reactions, as Post.reactionGroups."
  reactionGroups: [ReactionGroup!]!${
    type.views ? `\n  "How often, and by how many people, it was seen (recordEntityViews), as Post.views."\n  views: ViewCounts!` : ''
  }
  "Who liked (or favourited) it, as Post.likers."
  likers(
    "Likers (the default) or favouriters (BAD_USER_INPUT for a kind a ${type.name} does not take)."
    kind: RelationKind = LIKE
    "Page size, 1..100 (else BAD_USER_INPUT)."
    first: Int = 20
    "Continue after this cursor of the same list; null starts at the newest."
    after: String
  ): UserConnection!
  "Who reacted with \`content\`, as Post.reactors."
  reactors(
    "One of \`reactionKinds\`' contents that a ${type.name} takes (else BAD_USER_INPUT)."
    content: String!
    "Page size, 1..100 (else BAD_USER_INPUT)."
    first: Int = 20
    "Continue after this cursor of the same list; null starts at the newest."
    after: String
  ): UserConnection!
}
`,
    )
    .join('');
}

/** An entity, or one a live push carries with the counts its flush pass published. */
type EntityModel = OwnedEntity & { liveCounts?: PostCounts };

const refOf = (entity: OwnedEntity) => ({ type: entity.type, id: entity.id });
const countsOf = (entity: EntityModel, { loaders }: GraphQLContext) => entity.liveCounts ?? loaders.counts.load(refOf(entity));

const ownerTypeResolvers = {
  id: (entity: OwnedEntity) => entity.key,
  counts: (entity: EntityModel, _: unknown, ctx: GraphQLContext) => countsOf(entity, ctx),
  myState: (entity: OwnedEntity, _: unknown, { viewer, loaders }: GraphQLContext, info: Parameters<typeof kindsShown>[0]) => {
    if (!viewer) return null;
    const taken = TYPES.kindsOf(entity.type);
    return loaders.viewerState.load({ entity: refOf(entity), kinds: kindsShown(info).filter((kind) => taken.includes(kind)) });
  },
  reactionGroups: (entity: EntityModel, _: unknown, ctx: GraphQLContext) => reactionGroupsOf(refOf(entity), countsOf(entity, ctx), ctx),
  likers: (entity: OwnedEntity, args: ListArgs & { kind?: PostRelationKind | null }, ctx: GraphQLContext) =>
    settersOf(refOf(entity), kindTakenBy(entity.type, POST_RELATIONS[args.kind ?? 'LIKE']), 'likers', args.first, args.after, ctx),
  reactors: (entity: OwnedEntity, args: ListArgs & { content: string }, ctx: GraphQLContext) =>
    settersOf(refOf(entity), kindTakenBy(entity.type, reactionNamed(args.content)), 'reactors', args.first, args.after, ctx),
};

/** A type that counts views has them too: slots of the same packed counters. */
const withViews = { ...ownerTypeResolvers, views: (entity: EntityModel, _: unknown, ctx: GraphQLContext) => countsOf(entity, ctx) };

interface ListArgs {
  first?: number | null;
  after?: string | null;
}

/** The resolvers of OwnedEntity and of every owner type. */
export function ownerTypeResolverMap(): Record<string, object> {
  return {
    OwnedEntity: { __resolveType: (entity: OwnedEntity) => TYPES.get(entity.type).typename },
    ...Object.fromEntries(TYPES.owned.map((type) => [type.typename, type.views ? withViews : ownerTypeResolvers])),
  };
}
