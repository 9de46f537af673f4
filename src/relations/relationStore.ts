// Relation facts in Redis: set a user's like/fav on a post to an absolute state (one Lua
// step that also appends the counter event), and read the viewer's own state.
import { conflict } from '../errors.js';
import { checkText } from '../text.js';
import type { EntityRef, Keys } from '../redis/keys.js';
import { isCluster } from '../redis/client.js';
import { commandGroups } from '../redis/partition.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { FOLLOW, FOLLOW_SDS_INDEX, USER } from './follows.js';
import { METRICS, POST, type Metric, type RelationKind } from './kinds.js';

export const IDEMPOTENCY_TTL_S = 24 * 3600;
export const IDEMPOTENCY_KEY_MAX = 255;

export interface SetRelationInput {
  userId: number;
  postId: number;
  authorId: number;
  kind: RelationKind;
  active: boolean;
  idempotencyKey?: string | null;
}

/** One fact in its most general form: a user's relation of `metric` to `entity`. */
export interface SetFactInput {
  userId: number;
  entity: EntityRef;
  metric: Metric;
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

export function createRelationStore(redis: ScriptedRedis, keys: Keys) {
  const conflictError = () =>
    conflict('idempotencyKey was already used for a different request; use a new key for a new action');

  async function setFact(input: SetFactInput): Promise<SetRelationResult> {
    const { userId, entity, metric, authorId, active } = input;
    const key = input.idempotencyKey ?? null;
    if (key !== null) checkText(key, 'idempotencyKey', 1, IDEMPOTENCY_KEY_MAX);
    const fingerprint = key === null ? '' : `${entity.type}:${entity.id}:${metric.name}:${active ? 1 : 0}`;

    if (key !== null) {
      // The result record lives in the entity's slot (the script must reach it); this claim in
      // the user's slot is what catches the same key reused for another entity.
      const claimed = (await redis.call(
        'SET', keys.idempotencyClaim(userId, key), fingerprint, 'EX', IDEMPOTENCY_TTL_S, 'NX', 'GET',
      )) as string | null;
      if (claimed !== null && claimed !== fingerprint) throw conflictError();
    }

    const partition = keys.partitionOf(entity);
    const reply = await redis.setRelation(
      keys.chunkIndex(metric.name, entity),
      keys.arrayIndex(metric.name, entity),
      keys.outbox(partition),
      keys.idempotency(entity, userId, key ?? ''),
      keys.partitionTag(partition),
      active ? 1 : 0,
      keys.prefix,
      fingerprint,
      IDEMPOTENCY_TTL_S,
      entity.type,
      entity.id,
      metric.name,
      metric.sdsIndex,
      userId,
      authorId,
    );
    if (reply === -1) throw conflictError();
    if (!Array.isArray(reply)) throw new Error(`setRelation failed with code ${reply}`);
    const [status, changed, eventId] = reply;
    return { changed: changed === 1, replayed: status === 2, eventId };
  }

  /**
   * Whether `userId` has each of `metrics` on each entity (`[entity][metric]`): one script
   * call per command group (the whole page on a single Redis, a partition on a Cluster), all
   * issued in one tick, so auto-pipelining sends them as one round trip.
   */
  async function hasFacts(userId: number, type: string, metrics: readonly string[], ids: readonly number[]): Promise<boolean[][]> {
    const partitions = ids.map((id) => keys.partitionOf({ type, id }));
    const answers: boolean[][] = new Array(ids.length);
    await Promise.all(
      commandGroups(ids, (_, i) => partitions[i]!, isCluster(redis)).map(async (indexes) => {
        const args: (string | number)[] = [keys.chunkIndex(metrics[0]!, { type, id: ids[indexes[0]!]! }), keys.prefix, userId, type, metrics.join(',')];
        for (const i of indexes) args.push(keys.partitionTag(partitions[i]!), ids[i]!);
        const reply = await redis.hasFacts(...args);
        indexes.forEach((i, k) => (answers[i] = metrics.map((_, m) => reply[k * metrics.length + m] === 1)));
      }),
    );
    return answers;
  }

  return {
    setFact,

    /** A like or favourite on a post. */
    set: (input: SetRelationInput) =>
      setFact({ ...input, entity: { type: POST, id: input.postId }, metric: METRICS[input.kind] }),

    /** `userId` following (or no longer following) `followeeId`. */
    setFollow: (input: { userId: number; followeeId: number; active: boolean; idempotencyKey?: string | null }) =>
      setFact({
        userId: input.userId,
        entity: { type: USER, id: input.followeeId },
        metric: { name: FOLLOW, sdsIndex: FOLLOW_SDS_INDEX },
        authorId: input.followeeId,
        active: input.active,
        idempotencyKey: input.idempotencyKey,
      }),

    /** Whether the viewer follows each user, in order. */
    follows: async (viewerId: number, userIds: readonly number[]) =>
      (await hasFacts(viewerId, USER, [FOLLOW], userIds)).map(([follows]) => follows!),

    /** The viewer's like and fav on each post, in order. */
    async viewerStates(userId: number, postIds: readonly number[]): Promise<ViewerState[]> {
      const facts = await hasFacts(userId, POST, [METRICS.LIKE.name, METRICS.FAV.name], postIds);
      return facts.map(([liked, faved]) => ({ liked: liked!, faved: faved! }));
    },
  };
}

export type RelationStore = ReturnType<typeof createRelationStore>;
