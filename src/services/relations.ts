// Setting a like, favourite, reaction, bookmark or follow to an absolute state (never a toggle, so a retried
// request is harmless): checks the target, charges the `changes` budget, and writes the fact
// through the relation store's one Lua step (fact, idempotency record, counter event).
import type { OwnedEntity } from '../db/entities.js';
import type { EntityCache } from '../db/entityCache.js';
import type { PostCache } from '../db/postCache.js';
import type { PostModel } from '../db/posts.js';
import type { UserModel, UserStore } from '../db/users.js';
import { POST } from '../domain/entities.js';
import { NO_OWNER, type Relation } from '../domain/relations.js';
import { badInput, notFound } from '../errors.js';
import type { RelationStore } from '../relations/relationStore.js';
import type { Charge } from './charges.js';
import { kindTakenBy, ownerType } from './entities.js';
import type { Visibility } from './visibility.js';

export interface RelationServiceDeps {
  relations: RelationStore;
  postCache: PostCache;
  entityCache: EntityCache;
  users: UserStore;
  charge: Charge;
  /**
   * Only what a client may see takes changes: not a deleted post, not an erased user or their
   * posts. A change to an erased user's would land after the erasure read what to undo, or
   * after it deleted their rows: a follow of them would stay counted in the follower's
   * followings once the erasure deleted the fact, and a like or unlike of their post (still
   * in a post cache) would bring their user_counters row back.
   */
  visibility: Visibility;
}

export interface RelationChange {
  active: boolean;
  /** A retry with the same key is answered as the first request was (CONFLICT if it differs). */
  idempotencyKey?: string | null;
}

export function createRelationService(deps: RelationServiceDeps) {
  return {
    /** `userId`'s `relation` (a kind set on posts) on `postId` (NOT_FOUND for a post that is not there). */
    async setOnPost(
      userId: number,
      input: RelationChange & { postId: number; relation: Relation },
    ): Promise<{ post: PostModel; active: boolean; changed: boolean }> {
      const { postId, relation, active } = input;
      const post = deps.visibility.post(await deps.postCache.get(postId));
      if (!post) throw notFound(`post ${postId} not found`);
      await deps.charge('changes', userId);
      const { changed } = await deps.relations.setFact({
        userId,
        entity: { type: POST, id: postId },
        relation,
        authorId: post.authorId,
        active,
        idempotencyKey: input.idempotencyKey,
      });
      return { post, active, changed };
    },

    /**
     * `userId`'s `relation` on an entity a product owns, by the owner's (type, key): NOT_FOUND
     * for one not registered or deleted, BAD_USER_INPUT for a kind its type does not take. Its
     * owner's counters move, unless the owner's erasure started: then it has no owner.
     */
    async setOnEntity(
      userId: number,
      input: RelationChange & { type: string; key: string; relation: Relation },
    ): Promise<{ entity: OwnedEntity; active: boolean; changed: boolean }> {
      const { type, key, relation, active } = input;
      kindTakenBy(ownerType(type), relation);
      const entity = await deps.entityCache.get(type, key);
      if (!entity) throw notFound(`${type} ${key} not found`);
      await deps.charge('changes', userId);
      const owner = entity.ownerId !== null && deps.visibility.user({ id: entity.ownerId }) ? entity.ownerId : NO_OWNER;
      const { changed } = await deps.relations.setFact({
        userId,
        entity: { type, id: entity.id },
        relation,
        authorId: owner,
        active,
        idempotencyKey: input.idempotencyKey,
      });
      return { entity, active, changed };
    },

    /** Whether `userId` follows `followeeId` (BAD_USER_INPUT for oneself, NOT_FOUND for an unknown user). */
    async follow(
      userId: number,
      input: RelationChange & { followeeId: number },
    ): Promise<{ user: UserModel; active: boolean; changed: boolean }> {
      const { followeeId, active } = input;
      if (followeeId === userId) throw badInput('you cannot follow yourself', { argumentName: 'userId' });
      const user = deps.visibility.user((await deps.users.byIds([followeeId]))[0]);
      if (!user) throw notFound(`user ${followeeId} not found`);
      await deps.charge('changes', userId);
      const { changed } = await deps.relations.setFollow({ userId, followeeId, active, idempotencyKey: input.idempotencyKey });
      return { user, active, changed };
    },
  };
}

export type RelationService = ReturnType<typeof createRelationService>;
