// This deployment's relation kinds, built once per process from its REACTIONS settings.
import { deploymentKinds } from '../config.js';
import { createRelationKinds, type RelationKinds } from './relations.js';

const { reactions, rules } = deploymentKinds();
export const KINDS: RelationKinds = createRelationKinds(reactions, rules);
