// Relation facts in Redis: set a user's like/fav on a post to an absolute state (one Lua
// step that also appends the counter event), and read the viewer's own state.
import { type EntityRef, type EntityType, entityName, POST, USER } from '../domain/entities.js';
import { FAV, FOLLOW, LIKE, POST_RELATIONS, type PostRelationKind, type Relation } from '../domain/relations.js';
import { conflict, unavailable } from '../errors.js';
import { isCluster } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';
import { commandGroups } from '../redis/partition.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { checkText } from '../text.js';

export const IDEMPOTENCY_TTL_S = 24 * 3600;
/** setRelation's reply when Redis does not hold the entity's facts (lua/setRelation-6.lua). */
const NOT_RESTORED = -3;
export const IDEMPOTENCY_KEY_MAX = 255;

export interface SetRelationInput {
  userId: number;
  postId: number;
  authorId: number;
  kind: PostRelationKind;
  active: boolean;
  idempotencyKey?: string | null;
}

/** One fact in its most general form: a user's `relation` to `entity`. */
export interface SetFactInput {
  userId: number;
  entity: EntityRef;
  relation: Relation;
  /** Whose counters the change also moves (the post's author; the followed user). */
  authorId: number;
  active: boolean;
  idempotencyKey?: string | null;
}

export interface SetRelationResult {
  changed: boolean;
  /** True when this is a retry answered from the idempotency record. */
  replayed: boolean;
  /** Outbox id of the event this change produced ('' when nothing changed). */
  eventId: string;
}

export interface ViewerState {
  liked: boolean;
  faved: boolean;
}

/** A relation's facts for one entity, or null when Redis does not hold them (lost, not yet restored). */
export type FactsOrUnknown<T> = T | null;

export interface RelationStoreDeps {
  /**
   * Brings an entity's facts back from PostgreSQL after Redis lost them
   * (src/recovery/entityRestore.ts); a write waits for it instead of deciding against nothing.
   * Without it (tools that own their Redis) such a write is refused.
   */
  restore?: (entity: EntityRef) => Promise<void>;
}

export function createRelationStore(redis: ScriptedRedis, keys: Keys, deps: RelationStoreDeps = {}) {
  const conflictError = () => conflict('idempotencyKey was already used for a different request; use a new key for a new action');

  async function setFact(input: SetFactInput): Promise<SetRelationResult> {
    const { userId, entity, relation, authorId, active } = input;
    const key = input.idempotencyKey ?? null;
    if (key !== null) checkText(key, 'idempotencyKey', 1, IDEMPOTENCY_KEY_MAX);
    const fingerprint = key === null ? '' : `${entityName(entity)}:${relation.name}:${active ? 1 : 0}`;

    if (key !== null) {
      // The result record lives in the entity's slot (the script must reach it); this claim in
      // the user's slot is what catches the same key reused for another entity.
      const claimed = (await redis.call('SET', keys.idempotencyClaim(userId, key), fingerprint, 'EX', IDEMPOTENCY_TTL_S, 'NX', 'GET')) as
        | string
        | null;
      if (claimed !== null && claimed !== fingerprint) throw conflictError();
    }

    const partition = keys.partitionOf(entity);
    const attempt = () =>
      redis.setRelation(
        keys.chunkIndex(relation.name, entity),
        keys.arrayIndex(relation.name, entity),
        keys.outbox(partition),
        keys.idempotency(entity, userId, key ?? ''),
        keys.ready(partition),
        keys.restored(partition),
        keys.partitionTag(partition),
        active ? 1 : 0,
        keys.prefix,
        fingerprint,
        IDEMPOTENCY_TTL_S,
        entity.type,
        entity.id,
        relation.name,
        relation.slot,
        userId,
        authorId,
      );
    let reply = await attempt();
    if (reply === NOT_RESTORED && deps.restore) {
      await deps.restore(entity);
      reply = await attempt();
    }
    if (reply === NOT_RESTORED)
      throw unavailable(`${entity.type} ${entity.id} is being restored after a Redis restart; try again shortly`, 1000);
    if (reply === -1) throw conflictError();
    if (!Array.isArray(reply)) throw new Error(`setRelation failed with code ${reply}`);
    const [status, changed, eventId] = reply;
    return { changed: changed === 1, replayed: status === 2, eventId };
  }

  /**
   * Whether `userId` has each of `relations` on each entity (`[entity][relation]`), null for an
   * entity whose facts Redis does not hold: one script call per command group (the whole page
   * on a single Redis, a partition on a Cluster), all issued in one tick, so auto-pipelining
   * sends them as one round trip.
   */
  async function hasFacts(
    userId: number,
    type: EntityType,
    relations: readonly Relation[],
    ids: readonly number[],
  ): Promise<FactsOrUnknown<boolean[]>[]> {
    const partitions = ids.map((id) => keys.partitionOf({ type, id }));
    const answers: FactsOrUnknown<boolean[]>[] = new Array(ids.length);
    const stride = relations.length + 1; // per entity: whether Redis holds it, then each relation
    await Promise.all(
      commandGroups(ids, (_, i) => partitions[i]!, isCluster(redis)).map(async (indexes) => {
        const args: (string | number)[] = [
          keys.chunkIndex(relations[0]!.name, { type, id: ids[indexes[0]!]! }),
          keys.prefix,
          userId,
          type,
          relations.map((r) => r.name).join(','),
        ];
        for (const i of indexes) args.push(keys.partitionTag(partitions[i]!), ids[i]!);
        const reply = await redis.hasFacts(...args);
        indexes.forEach((i, k) => {
          answers[i] = reply[k * stride] === 1 ? relations.map((_, m) => reply[k * stride + 1 + m] === 1) : null;
        });
      }),
    );
    return answers;
  }

  return {
    setFact,

    /** A like or favourite on a post. */
    set: (input: SetRelationInput) => setFact({ ...input, entity: { type: POST, id: input.postId }, relation: POST_RELATIONS[input.kind] }),

    /** `userId` following (or no longer following) `followeeId`. */
    setFollow: (input: { userId: number; followeeId: number; active: boolean; idempotencyKey?: string | null }) =>
      setFact({
        userId: input.userId,
        entity: { type: USER, id: input.followeeId },
        relation: FOLLOW,
        authorId: input.followeeId,
        active: input.active,
        idempotencyKey: input.idempotencyKey,
      }),

    /** Whether the viewer follows each user, in order (null where Redis does not hold the facts). */
    follows: async (viewerId: number, userIds: readonly number[]): Promise<FactsOrUnknown<boolean>[]> =>
      (await hasFacts(viewerId, USER, [FOLLOW], userIds)).map((facts) => (facts ? facts[0]! : null)),

    /** The viewer's like and fav on each post, in order (null where Redis does not hold the facts). */
    async viewerStates(userId: number, postIds: readonly number[]): Promise<FactsOrUnknown<ViewerState>[]> {
      const facts = await hasFacts(userId, POST, [LIKE, FAV], postIds);
      return facts.map((f) => (f ? { liked: f[0]!, faved: f[1]! } : null));
    },
  };
}

export type RelationStore = ReturnType<typeof createRelationStore>;
