// Relation facts in Redis: set a user's like/fav on a post to an absolute state (one Lua
// step that also appends the counter event), and read the viewer's own state.
import { badInput, conflict } from '../errors.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { bitOf, chunkOf } from './bitmap.js';
import { METRICS, POST, type RelationKind } from './kinds.js';

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

  return {
    async set(input: SetRelationInput): Promise<SetRelationResult> {
      const { userId, postId, authorId, kind, active } = input;
      const key = input.idempotencyKey ?? null;
      if (key !== null) checkIdempotencyKey(key);
      const post = { type: POST, id: postId };
      const metric = METRICS[kind];
      const fingerprint = key === null ? '' : `${POST}:${postId}:${kind}:${active ? 1 : 0}`;

      if (key !== null) {
        // The result record lives in the post's slot (the script must reach it); this claim in
        // the user's slot is what catches the same key reused for another post.
        const claimed = (await redis.call(
          'SET', keys.idempotencyClaim(userId, key), fingerprint, 'EX', IDEMPOTENCY_TTL_S, 'NX', 'GET',
        )) as string | null;
        if (claimed !== null && claimed !== fingerprint) throw conflictError();
      }

      const chunk = chunkOf(userId);
      const reply = await redis.setRelation(
        keys.bitmapChunk(metric.name, post, chunk),
        keys.chunkIndex(metric.name, post),
        keys.outbox(keys.partitionOf(post)),
        keys.idempotency(post, userId, key ?? ''),
        bitOf(userId),
        active ? 1 : 0,
        chunk,
        fingerprint,
        IDEMPOTENCY_TTL_S,
        POST,
        postId,
        metric.name,
        metric.sdsIndex,
        userId,
        authorId,
      );
      if (reply === -1) throw conflictError();
      if (!Array.isArray(reply)) throw new Error(`setRelation failed with code ${reply}`);
      const [status, changed, eventId] = reply;
      return { changed: changed === 1, replayed: status === 2, eventId };
    },

    /** The viewer's like and fav on each post, in order: GETBITs that auto-pipeline into one round trip. */
    async viewerStates(userId: number, postIds: readonly number[]): Promise<ViewerState[]> {
      const chunk = chunkOf(userId);
      const bit = bitOf(userId);
      const getBit = (kind: RelationKind, postId: number) =>
        redis.getbit(keys.bitmapChunk(METRICS[kind].name, { type: POST, id: postId }, chunk), bit);
      return Promise.all(
        postIds.map(async (postId) => {
          const [liked, faved] = await Promise.all([getBit('LIKE', postId), getBit('FAV', postId)]);
          return { liked: liked === 1, faved: faved === 1 };
        }),
      );
    },
  };
}

export type RelationStore = ReturnType<typeof createRelationStore>;
