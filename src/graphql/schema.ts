// The executable schema: schema.graphql (the source of truth) plus the resolvers, one per
// process for HTTP (Apollo) and WebSocket (graphql-ws) alike.
import { readFileSync } from 'node:fs';
import { makeExecutableSchema } from '@graphql-tools/schema';
import { projectPath } from '../paths.js';
import { resolvers } from './resolvers/index.js';

export const typeDefs = readFileSync(projectPath('schema.graphql'), 'utf8');
export { resolvers };

export const createSchema = () => makeExecutableSchema({ typeDefs, resolvers });
