// This deployment's relation kinds and entity types, built once per process from its
// REACTIONS, REACTIONS_PER_USER and ENTITY_TYPES settings.
import { type Config, ConfigError, deploymentKinds } from '../config.js';
import { createEntityTypes, type EntityTypes } from './entityTypes.js';
import { createRelationKinds, type RelationKinds } from './relations.js';

const { reactions, rules, entityTypes } = deploymentKinds();
export const KINDS: RelationKinds = createRelationKinds(reactions, rules);
export const TYPES: EntityTypes = createEntityTypes(KINDS, entityTypes);

/**
 * Refuses a config loaded from other settings than this process's environment (an embedder
 * passing its own env to loadConfig): the registry is the environment's.
 */
export function assertKindsOf(config: Pick<Config, 'reactions' | 'oneReactionPerUser' | 'entityTypes'>) {
  const same =
    config.oneReactionPerUser === rules.oneReactionPerUser &&
    JSON.stringify(config.reactions) === JSON.stringify(KINDS.reactions.map((kind) => kind.reaction)) &&
    JSON.stringify(config.entityTypes) === JSON.stringify(entityTypes);
  if (!same)
    throw new ConfigError([
      'REACTIONS, REACTIONS_PER_USER and ENTITY_TYPES must be set in the process environment, where the registry reads them',
    ]);
}
