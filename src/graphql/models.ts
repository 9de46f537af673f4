// What resolvers pass around for each GraphQL object type (codegen `mappers`).
export type { PostModel } from '../db/posts.js';
export type { UserModel } from '../db/users.js';

import type { PostModel } from '../db/posts.js';
import type { UserModel } from '../db/users.js';
import type { PostRelationKind } from '../domain/relations.js';
import type { Page } from './connection.js';

export type PostConnectionModel = Page<PostModel>;
export type PostEdgeModel = PostConnectionModel['edges'][number];
export type UserConnectionModel = Page<UserModel>;
export type UserEdgeModel = UserConnectionModel['edges'][number];

export interface LikeRelationPayloadModel {
  post: PostModel;
  kind: PostRelationKind;
  active: boolean;
  changed: boolean;
}

export interface FollowRelationPayloadModel {
  user: UserModel;
  active: boolean;
  changed: boolean;
}
