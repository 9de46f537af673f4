// Tally as an Apollo Federation 2 subgraph (GRAPHQL_SCHEMA=subgraph). The product's graph owns
// its content types and its users; Tally adds its fields to them by `@key(fields: "id")` and
// keeps only what is its own: the stand-alone service's posts, its feed and a user's name are
// left out, so nothing clashes with the owner's types when a gateway composes the two.
import { buildSubgraphSchema } from '@apollo/subgraph';
import { type ConstDirectiveNode, type DefinitionNode, type DocumentNode, type GraphQLSchema, Kind, parse, visit } from 'graphql';
import { TYPES } from '../domain/kinds.js';
import { badInput, forbidden } from '../errors.js';
import { parseId } from './args.js';
import type { GraphQLContext } from './context.js';

type SubgraphModule = Extract<Extract<Parameters<typeof buildSubgraphSchema>[0], unknown[]>[number], { typeDefs: DocumentNode }>;

/** The federation spec this subgraph links (any Federation 2 gateway or router composes it). */
export const FEDERATION_SPEC = 'https://specs.apollo.dev/federation/v2.7';

/** Fields of schema.graphql that are the stand-alone service's own: its posts and a person's profile. */
const STANDALONE_ONLY: Readonly<Record<string, readonly string[]>> = {
  Query: ['post', 'posts', 'feed', 'user', 'viewer'],
  Mutation: ['createPost', 'deletePost', 'setLikeRelation', 'setReaction', 'setBookmark', 'recordViews'],
  Subscription: ['postCountsChanged'],
  User: ['name', 'createdAt', 'likedPosts', 'bookmarks'],
};

/** Value types a product's graph usually has too: shared, so both may define them. */
const SHAREABLE = new Set(['PageInfo']);

const directive = (name: string, args: Record<string, string> = {}): ConstDirectiveNode => ({
  kind: Kind.DIRECTIVE,
  name: { kind: Kind.NAME, value: name },
  arguments: Object.entries(args).map(([arg, value]) => ({
    kind: Kind.ARGUMENT,
    name: { kind: Kind.NAME, value: arg },
    value: { kind: Kind.STRING, value },
  })),
});

const definedName = (definition: DefinitionNode): string | null => ('name' in definition && definition.name ? definition.name.value : null);

/** The types that carry Tally's fields by key: the owner types and the product's users. */
export const keyedTypenames = (): string[] => [...TYPES.owned.map((type) => type.typename), 'User'];

/** The type names a definition refers to (fields, arguments, interfaces, members). */
function referencedTypes(definition: DefinitionNode): string[] {
  const names: string[] = [];
  visit(definition, {
    enter(node) {
      if (node.kind === Kind.NAMED_TYPE) names.push(node.name.value);
    },
  });
  return names;
}

/** Keeps the definitions reachable from `roots` (and the schema definition); drops the others. */
function reachable(definitions: readonly DefinitionNode[], roots: readonly string[]): DefinitionNode[] {
  const byName = new Map(definitions.flatMap((d) => (definedName(d) ? [[definedName(d)!, d] as const] : [])));
  const seen = new Set<string>();
  const pending = [...roots];
  while (pending.length > 0) {
    const name = pending.pop()!;
    if (seen.has(name) || !byName.has(name)) continue;
    seen.add(name);
    pending.push(...referencedTypes(byName.get(name)!));
  }
  return definitions.filter((d) => definedName(d) === null || seen.has(definedName(d)!));
}

/**
 * schema.graphql without the stand-alone service's own fields and the types only they reach
 * (from the root types and from `more`: the types the owner types' fields name).
 */
export function tallySubgraphTypes(typeDefs: string, more: readonly string[] = []): DefinitionNode[] {
  const edited = visit(parse(typeDefs), {
    ObjectTypeDefinition(node) {
      const dropped = STANDALONE_ONLY[node.name.value] ?? [];
      return { ...node, fields: node.fields?.filter((field) => !dropped.includes(field.name.value)) };
    },
  });
  return reachable(edited.definitions, ['Query', 'Mutation', 'Subscription', ...more]);
}

/** The subgraph's SDL: Tally's part of schema.graphql and the owner types, keyed and linked to federation. */
export function subgraphTypeDefs(typeDefs: string, ownerTypeDefs: string): DocumentNode {
  const keyed = new Set(keyedTypenames());
  const [link] = parse(`extend schema @link(url: "${FEDERATION_SPEC}", import: ["@key", "@shareable"])`).definitions;
  const owner = ownerTypeDefs.trim() ? parse(ownerTypeDefs).definitions : [];
  const document: DocumentNode = {
    kind: Kind.DOCUMENT,
    definitions: [link!, ...tallySubgraphTypes(typeDefs, owner.flatMap(referencedTypes)), ...owner],
  };
  return visit(document, {
    ObjectTypeDefinition(node) {
      const directives = [
        ...(node.directives ?? []),
        ...(keyed.has(node.name.value) ? [directive('key', { fields: 'id' })] : []),
        ...(SHAREABLE.has(node.name.value) ? [directive('shareable')] : []),
      ];
      return { ...node, directives };
    },
  });
}

/** How each keyed type turns a gateway's representation into what its resolvers take. */
function referenceResolvers(): Record<string, object> {
  const owned = TYPES.owned.map((type) => [
    type.typename,
    {
      __resolveReference: ({ id }: { id: string }, { loaders }: GraphQLContext) => loaders.ownedEntity.load({ type: type.name, key: id }),
    },
  ]);
  return {
    ...Object.fromEntries(owned),
    User: {
      // A user of the product whom Tally has not met yet holds no relations: zero counts. An
      // erased one resolves to null, as everywhere else.
      __resolveReference: async ({ id }: { id: string }, { loaders, deps }: GraphQLContext) => {
        const userId = parseId(id, 'representations');
        const user = await loaders.user.load(userId);
        if (user || deps.erasedUsers.has(userId)) return user;
        return { id: userId, name: null, likesPublic: false, createdAt: new Date(0) };
      },
    },
  };
}

/** The schema of the subgraph: Tally's resolvers on the pruned SDL, with `_entities` and `_service`. */
export function createSubgraphSchema(
  typeDefs: { tally: string; owner: string },
  resolvers: Record<string, object>,
  options: { sdlToServicesOnly: boolean },
): GraphQLSchema {
  const document = subgraphTypeDefs(typeDefs.tally, typeDefs.owner);
  const present = new Set(document.definitions.map(definedName));
  const kept = Object.fromEntries(Object.entries(resolvers).filter(([typename]) => present.has(typename)));
  const references = referenceResolvers();
  const merged = Object.fromEntries(
    [...new Set([...Object.keys(kept), ...Object.keys(references)])].map((typename) => [
      typename,
      { ...(kept[typename] ?? {}), ...(references[typename] ?? {}) },
    ]),
  );
  // Resolver maps are typed per type by codegen; the subgraph helper takes them untyped.
  const schema = buildSubgraphSchema([{ typeDefs: document, resolvers: merged as SubgraphModule['resolvers'] }]);
  guardFederationFields(schema, options);
  return schema;
}

/**
 * `_entities` takes only Tally's keyed types with a string id (anything else is BAD_USER_INPUT,
 * before a lookup); `_service` (the SDL) is the gateway's, and in production a service
 * credential's only, as introspection is refused to clients.
 */
function guardFederationFields(schema: GraphQLSchema, { sdlToServicesOnly }: { sdlToServicesOnly: boolean }) {
  const fields = schema.getQueryType()!.getFields();
  const keyed = new Set(keyedTypenames());
  const entities = fields._entities!;
  const resolveEntities = entities.resolve!;
  entities.resolve = (source, args: { representations: { __typename?: unknown; id?: unknown }[] }, context, info) => {
    for (const [i, representation] of args.representations.entries()) {
      if (typeof representation.__typename !== 'string' || !keyed.has(representation.__typename) || typeof representation.id !== 'string') {
        throw badInput(`representations[${i}] is not {__typename, id} of one of ${[...keyed].join(', ')}`, {
          argumentName: 'representations',
        });
      }
    }
    return resolveEntities(source, args, context, info);
  };
  const service = fields._service!;
  const resolveService = service.resolve!;
  service.resolve = (source, args, context: GraphQLContext, info) => {
    if (sdlToServicesOnly && !context.service) throw forbidden('the subgraph SDL is served to a service credential only');
    return resolveService(source, args, context, info);
  };
}
