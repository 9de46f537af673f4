// What resolvers pass around for each GraphQL object type (codegen `mappers`).
import type { PostCounts } from '../counters/postCounters.js';
import type { UserCounts } from '../counters/userCounters.js';
import type { OwnedEntity } from '../db/entities.js';
import type { PostModel as StoredPost } from '../db/posts.js';
import type { UserModel as StoredUser } from '../db/users.js';
import type { PostRelationKind, Relation } from '../domain/relations.js';
import type { ViewerState } from '../relations/relationStore.js';
import type { RecordedEntityView, RecordedView } from '../services/views.js';
import type { Page } from './connection.js';

/**
 * What a feed page's load found for one of its posts (src/graphql/resolvers/pageState.ts): its
 * counts and the viewer's state for `kinds`, or the error its fields answer with instead of
 * asking again; undefined where the page did not load it.
 */
export interface PageState {
  counts: PostCounts | Error | undefined;
  kinds: ReadonlySet<Relation>;
  viewerState: ViewerState | Error | undefined;
}

/**
 * A post; a pushed one (subscriptions) carries the counts its flush pass published, one on a
 * feed page what its page loaded.
 */
export type PostModel = StoredPost & { liveCounts?: PostCounts; page?: PageState };
/** A user; a pushed one carries the counts last published for them. */
export type UserModel = StoredUser & { liveCounts?: UserCounts };

export type PostConnectionModel = Page<PostModel>;
export type PostEdgeModel = PostConnectionModel['edges'][number];
export type UserConnectionModel = Page<UserModel>;
export type UserEdgeModel = UserConnectionModel['edges'][number];

export interface EntityRelationPayloadModel {
  entity: OwnedEntity;
  kind: PostRelationKind;
  active: boolean;
  changed: boolean;
}

export interface EntityReactionPayloadModel {
  entity: OwnedEntity;
  content: string;
  active: boolean;
  changed: boolean;
}

export interface LikeRelationPayloadModel {
  post: PostModel;
  kind: PostRelationKind;
  active: boolean;
  changed: boolean;
}

/** One reaction kind of a post: its count and whether the viewer holds it. */
export interface ReactionGroupModel {
  content: string;
  emoji: string;
  count: number;
  viewerHasReacted: boolean;
}

export interface FollowRelationPayloadModel {
  user: UserModel;
  active: boolean;
  changed: boolean;
}

export interface EraseAccountPayloadModel {
  userId: number;
  state: 'ERASING' | 'DONE';
}

/** One post's view as recordViews recorded it. */
export type RecordedViewModel = Exclude<RecordedView, Error>;

/** recordViews' answer: a post that is missing or deleted is its NOT_FOUND, raised at its entry's path. */
export interface RecordViewsPayloadModel {
  views: RecordedView[];
}

/** One entity's view as recordEntityViews recorded it. */
export type RecordedEntityViewModel = Exclude<RecordedEntityView, Error>;

/** recordEntityViews' answer, as recordViews'. */
export interface RecordEntityViewsPayloadModel {
  views: RecordedEntityView[];
}
