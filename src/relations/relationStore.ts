// Relation facts in Redis: set a user's relation of any kind (src/domain/relations.ts) to an
// absolute state (one Lua step that also appends the counter event), and read the viewer's own state.
import { type EntityRef, type EntityType, entityName, POST, USER } from '../domain/entities.js';
import { KINDS, TYPES } from '../domain/kinds.js';
import { FOLLOW, POST_RELATIONS, type PostRelationKind, type Relation } from '../domain/relations.js';
import { conflict, outcomeUnknown, unavailable } from '../errors.js';
import { isCluster } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';
import { commandGroups } from '../redis/partition.js';
import { isScriptError, ScriptErrorCode } from '../redis/scriptErrors.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { checkText } from '../text.js';

export const IDEMPOTENCY_TTL_S = 24 * 3600;
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

/** The kinds (by name) the viewer holds on a post. */
export type ViewerState = ReadonlySet<string>;

/** A state that holds nothing (anonymous viewers, most posts of a page): one for all. */
export const NOTHING_HELD: ViewerState = new Set();

/** A relation's facts for one entity, or null when Redis does not hold them (lost, not yet restored). */
export type FactsOrUnknown<T> = T | null;

export interface RelationStoreDeps {
  /**
   * Brings an entity's facts back from PostgreSQL after Redis lost them
   * (src/recovery/entityRestore.ts); a write waits for it instead of deciding against nothing.
   * Without it (tools that own their Redis) such a write is refused.
   */
  restore?: (entity: EntityRef) => Promise<void>;
  /**
   * How long a write may take to reach Redis before Redis refuses it (the Redis command
   * timeout): one whose client timed out never lands later. Unset: no deadline (tools).
   */
  writeDeadlineMs?: number;
}

/** ioredis's words for a command its connection did not answer in time (REDIS_COMMAND_TIMEOUT_MS). */
const isTimeout = (error: unknown) => error instanceof Error && /timed out|Socket timeout/.test(error.message);

export function createRelationStore(redis: ScriptedRedis, keys: Keys, deps: RelationStoreDeps = {}) {
  const scripts = createScripts(redis, keys);
  const conflictError = () => conflict('idempotencyKey was already used for a different request; use a new key for a new action');

  async function setFact(input: SetFactInput): Promise<SetRelationResult> {
    const { userId, entity, relation, authorId, active } = input;
    const key = input.idempotencyKey ?? null;
    if (key !== null) checkText(key, 'idempotencyKey', 1, IDEMPOTENCY_KEY_MAX);
    const fingerprint = key === null ? '' : `${entityName(entity)}:${relation.name}:${active ? 1 : 0}`;

    const attempt = () =>
      scripts.setRelation({
        entity,
        relation,
        userId,
        authorId,
        active,
        idempotencyKey: key ?? '',
        fingerprint,
        idempotencyTtlS: IDEMPOTENCY_TTL_S,
        notAfterMs: deps.writeDeadlineMs ? Date.now() + deps.writeDeadlineMs : 0,
        exclusive: KINDS.exclusiveWith(relation),
      });
    try {
      if (key !== null) {
        // The result record lives in the entity's slot (the script must reach it); this claim in
        // the user's slot is what catches the same key reused for another entity.
        const claim = keys.idempotencyClaim(userId, key);
        const claimed = (await redis.call('SET', claim, fingerprint, 'EX', IDEMPOTENCY_TTL_S, 'NX', 'GET')) as string | null;
        if (claimed !== null && claimed !== fingerprint) throw conflictError();
      }
      try {
        return await attempt();
      } catch (error) {
        // Redis lost this entity's facts: bring them back from PostgreSQL, then decide.
        if (!isScriptError(error, ScriptErrorCode.NotRestored) || !deps.restore) throw error;
        await deps.restore(entity);
        return await attempt();
      }
    } catch (error) {
      if (isScriptError(error, ScriptErrorCode.IdempotencyConflict)) throw conflictError();
      if (isScriptError(error, ScriptErrorCode.TooLate)) {
        throw unavailable('the change reached Redis too late and was not applied; send it again', 1000);
      }
      if (isTimeout(error)) {
        throw outcomeUnknown('Redis did not answer in time: the change may or may not be applied; retry with the same idempotencyKey');
      }
      if (isScriptError(error, ScriptErrorCode.NotRestored)) {
        throw unavailable(`${entity.type} ${entity.id} is being restored after a Redis restart; try again shortly`, 1000);
      }
      throw error;
    }
  }

  /**
   * What `pick` makes of which of `relations` `userId` has on each entity, null for an entity
   * whose facts Redis does not hold: one script call per command group (the whole page on a
   * single Redis, a partition on a Cluster), all issued in one tick, so auto-pipelining sends
   * them as one round trip.
   */
  async function hasFacts<T>(
    userId: number,
    type: EntityType,
    relations: readonly Relation[],
    ids: readonly number[],
    pick: (has: (relation: number) => boolean) => T,
  ): Promise<FactsOrUnknown<T>[]> {
    const partitions = ids.map((id) => keys.partitionOf({ type, id }));
    const answers: FactsOrUnknown<T>[] = new Array(ids.length);
    await Promise.all(
      commandGroups(ids, (_, i) => partitions[i]!, isCluster(redis)).map(async (indexes) => {
        const facts = await scripts.hasFacts({ userId, type, relations, ids: indexes.map((i) => ids[i]!) });
        indexes.forEach((i, k) => {
          answers[i] = facts.ready(k) ? pick((r) => facts.has(k, r)) : null;
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
      hasFacts(viewerId, USER, [FOLLOW], userIds, (has) => has(0)),

    /** Which of `kinds` (every kind set on posts by default) the viewer holds on each post, in order (null where Redis does not hold the facts). */
    viewerStates(
      userId: number,
      postIds: readonly number[],
      kinds: readonly Relation[] = TYPES.kindsOf(POST),
      type: EntityType = POST,
    ): Promise<FactsOrUnknown<ViewerState>[]> {
      return hasFacts(userId, type, kinds, postIds, (has) => {
        let held: Set<string> | undefined;
        for (let k = 0; k < kinds.length; k++) {
          if (!has(k)) continue;
          held ??= new Set();
          held.add(kinds[k]!.name);
        }
        return held ?? NOTHING_HELD;
      });
    },
  };
}

export type RelationStore = ReturnType<typeof createRelationStore>;
