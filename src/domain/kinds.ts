// This deployment's relation kinds, built once per process from its REACTIONS settings.
import { type Config, ConfigError, deploymentKinds } from '../config.js';
import { createRelationKinds, type RelationKinds } from './relations.js';

const { reactions, rules } = deploymentKinds();
export const KINDS: RelationKinds = createRelationKinds(reactions, rules);

/**
 * Refuses a config loaded from other reaction settings than this process's environment (an
 * embedder passing its own env to loadConfig): the registry is the environment's.
 */
export function assertKindsOf(config: Pick<Config, 'reactions' | 'oneReactionPerUser'>) {
  const same =
    config.oneReactionPerUser === rules.oneReactionPerUser &&
    JSON.stringify(config.reactions) === JSON.stringify(KINDS.reactions.map((kind) => kind.reaction));
  if (!same)
    throw new ConfigError(['REACTIONS and REACTIONS_PER_USER must be set in the process environment, where the registry reads them']);
}
