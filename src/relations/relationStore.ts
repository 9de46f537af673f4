// Relation facts in Redis: set a user's like/fav on a post to an absolute state (one Lua
// step that also appends the counter event), and read the viewer's own state.
import { badInput, conflict } from '../errors.js';
import type { EntityRef, Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { bitOf, chunkOf } from './bitmap.js';
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

function checkIdempotencyKey(key: string): void {
  if (key.length === 0 || key.length > IDEMPOTENCY_KEY_MAX) {
    throw badInput(`idempotencyKey must be 1 to ${IDEMPOTENCY_KEY_MAX} characters, got ${key.length}`, {
      argumentName: 'idempotencyKey',
    });
  }
}

export function createRelationStore(redis: ScriptedRedis, keys: Keys) {
  const conflictError = () =>
    conflict('idempotencyKey was already used for a different request; use a new key for a new action');

  async function setFact(input: SetFactInput): Promise<SetRelationResult> {
    const { userId, entity, metric, authorId, active } = input;
    const key = input.idempotencyKey ?? null;
    if (key !== null) checkIdempotencyKey(key);
    const fingerprint = key === null ? '' : `${entity.type}:${entity.id}:${metric.name}:${active ? 1 : 0}`;

    if (key !== null) {
      // The result record lives in the entity's slot (the script must reach it); this claim in
      // the user's slot is what catches the same key reused for another entity.
      const claimed = (await redis.call(
        'SET', keys.idempotencyClaim(userId, key), fingerprint, 'EX', IDEMPOTENCY_TTL_S, 'NX', 'GET',
      )) as string | null;
      if (claimed !== null && claimed !== fingerprint) throw conflictError();
    }

    const chunk = chunkOf(userId);
    const reply = await redis.setRelation(
      keys.bitmapChunk(metric.name, entity, chunk),
      keys.chunkIndex(metric.name, entity),
      keys.outbox(keys.partitionOf(entity)),
      keys.idempotency(entity, userId, key ?? ''),
      bitOf(userId),
      active ? 1 : 0,
      chunk,
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

  /** GETBIT of `userId` in each entity's bitmap: auto-pipelined into one round trip. */
  const hasFact = (userId: number, metric: string, entity: EntityRef) =>
    redis.getbit(keys.bitmapChunk(metric, entity, chunkOf(userId)), bitOf(userId)).then((bit) => bit === 1);

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
    follows: (viewerId: number, userIds: readonly number[]) =>
      Promise.all(userIds.map((id) => hasFact(viewerId, FOLLOW, { type: USER, id }))),

    /** The viewer's like and fav on each post, in order: GETBITs that auto-pipeline into one round trip. */
    async viewerStates(userId: number, postIds: readonly number[]): Promise<ViewerState[]> {
      return Promise.all(
        postIds.map(async (id) => {
          const post = { type: POST, id };
          const [liked, faved] = await Promise.all([hasFact(userId, METRICS.LIKE.name, post), hasFact(userId, METRICS.FAV.name, post)]);
          return { liked, faved };
        }),
      );
    },
  };
}

export type RelationStore = ReturnType<typeof createRelationStore>;
