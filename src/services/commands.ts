// Every change a user (or a product's service) can make, as plain functions of (who, what):
// the API's resolvers, the seed and the tests call these the same way.
import { type AccountServiceDeps, createAccountService } from './accounts.js';
import { createEntityService, type EntityServiceDeps } from './entities.js';
import { createPostService, type PostServiceDeps } from './posts.js';
import { createProfileService } from './profiles.js';
import { createRelationService, type RelationServiceDeps } from './relations.js';
import { createViewService, type ViewServiceDeps } from './views.js';

export type CommandDeps = PostServiceDeps & RelationServiceDeps & AccountServiceDeps & EntityServiceDeps & ViewServiceDeps;

export function createCommands(deps: CommandDeps) {
  return {
    posts: createPostService(deps),
    relations: createRelationService(deps),
    profiles: createProfileService(deps),
    accounts: createAccountService(deps),
    entities: createEntityService(deps),
    views: createViewService(deps),
  };
}

export type Commands = ReturnType<typeof createCommands>;
