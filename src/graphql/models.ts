// What resolvers pass around for each GraphQL object type (codegen `mappers`).
export type { PostModel } from '../db/posts.js';
export type { UserModel } from '../db/users.js';
import type { PostModel } from '../db/posts.js';

export interface PostEdgeModel {
  cursor: string;
  node: PostModel;
}

export interface PostConnectionModel {
  edges: PostEdgeModel[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export interface LikeRelationPayloadModel {
  post: PostModel;
  kind: 'LIKE' | 'FAV';
  active: boolean;
  changed: boolean;
}
