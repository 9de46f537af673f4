// The executable schema: schema.graphql (the source of truth) plus the object types of the
// entity types a product owns (from the registry), and the resolvers, one per process for
// HTTP (Apollo) and WebSocket (graphql-ws) alike; served stand-alone or as a Federation 2
// subgraph of the product's graph (GRAPHQL_SCHEMA).
import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { buildSchema } from 'graphql';
import type { SchemaMode } from '../config.js';
import { TYPES } from '../domain/kinds.js';
import { projectPath } from '../paths.js';
import { resolvers } from './resolvers/index.js';
import { ownerTypeDefs, ownerTypeResolverMap } from './resolvers/ownedEntity.js';
import { createSubgraphSchema, tallySubgraphTypes } from './subgraph.js';

export const typeDefs = readFileSync(projectPath('schema.graphql'), 'utf8');
export { resolvers };

/** Refuses an owner type whose GraphQL name is one of the served schema's own types. */
function checkOwnerTypenames(mode: SchemaMode) {
  const taken = new Set(
    mode === 'standalone'
      ? Object.keys(buildSchema(typeDefs).getTypeMap())
      : tallySubgraphTypes(typeDefs).map((definition) => ('name' in definition ? definition.name?.value : undefined)),
  );
  const clashing = TYPES.owned.filter((type) => taken.has(type.typename));
  if (clashing.length > 0) {
    throw new Error(
      `ENTITY_TYPES: ${clashing.map((t) => `${t.name} (${t.typename})`).join(', ')} would be a GraphQL type Tally already has`,
    );
  }
}

export function createSchema(options: { mode: SchemaMode; production: boolean } = { mode: 'standalone', production: false }) {
  checkOwnerTypenames(options.mode);
  if (options.mode === 'subgraph') {
    return createSubgraphSchema(
      { tally: typeDefs, owner: ownerTypeDefs() },
      { ...resolvers, ...ownerTypeResolverMap() },
      {
        sdlToServicesOnly: options.production,
      },
    );
  }
  return makeExecutableSchema({ typeDefs: [typeDefs, ownerTypeDefs()], resolvers: [resolvers, ownerTypeResolverMap()] });
}
