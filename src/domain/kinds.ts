// This deployment's relation kinds, built once per process from its REACTIONS setting.
import { deploymentReactions } from '../config.js';
import { createRelationKinds, type RelationKinds } from './relations.js';

export const KINDS: RelationKinds = createRelationKinds(deploymentReactions());
