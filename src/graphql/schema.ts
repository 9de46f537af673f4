// The executable schema: schema.graphql (the source of truth) plus the object types of the
// entity types a product owns (from the registry), and the resolvers, one per process for
// HTTP (Apollo) and WebSocket (graphql-ws) alike.
import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { buildSchema } from 'graphql';
import { TYPES } from '../domain/kinds.js';
import { projectPath } from '../paths.js';
import { resolvers } from './resolvers/index.js';
import { ownerTypeDefs, ownerTypeResolverMap } from './resolvers/ownedEntity.js';

export const typeDefs = readFileSync(projectPath('schema.graphql'), 'utf8');
export { resolvers };

/** Refuses an owner type whose GraphQL name is one of schema.graphql's types. */
function checkOwnerTypenames() {
  const taken = buildSchema(typeDefs).getTypeMap();
  const clashing = TYPES.owned.filter((type) => taken[type.typename]);
  if (clashing.length > 0) {
    throw new Error(
      `ENTITY_TYPES: ${clashing.map((t) => `${t.name} (${t.typename})`).join(', ')} would be a GraphQL type Tally already has`,
    );
  }
}

export function createSchema() {
  checkOwnerTypenames();
  return makeExecutableSchema({ typeDefs: [typeDefs, ownerTypeDefs()], resolvers: [resolvers, ownerTypeResolverMap()] });
}
