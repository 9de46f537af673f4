// The executable schema: schema.graphql (the source of truth) plus the resolvers.
import { readFileSync } from 'node:fs';
import { projectPath } from '../paths.js';

export const typeDefs = readFileSync(projectPath('schema.graphql'), 'utf8');
export { resolvers } from './resolvers/index.js';
