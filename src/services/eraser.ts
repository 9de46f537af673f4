// Erasing an account, as bounded batches (run by the erasure jobs, src/jobs/erasureJobs.ts),
// one phase after another (ERASURE_PHASES; docs/design.md has the table):
//   posts           delete their posts as deletePost does (first: they vanish at once);
//   settle          wait until the fact persister has written every event from before then,
//                   so PostgreSQL holds all of the user's facts;
//   facts           set every like, favourite and follow of theirs inactive through the
//                   relation store, the path a mutation takes: each change emits its event, so
//                   every count moves by exactly the right amount, once (a fact already
//                   inactive changes nothing, so a batch run twice decrements nothing twice);
//   followers       the same for every follow of them;
//   settle-changes  wait until every process refuses them and the persister has written
//                   those changes; anything left (a change accepted meanwhile) goes back to
//                   `facts`;
//   rows            delete their rows: facts by and about them, posts, counters, the user;
//   redis           delete their cached counters and idempotency records in Redis;
//   done.
// Each batch saves where it got to; the erasure list keeps the user id after all of it.

import { randomUUID } from 'node:crypto';
import type { UserCounters } from '../counters/userCounters.js';
import type { ErasureQueries, OwnFactCursor } from '../db/erasureQueries.js';
import type { ErasureProgress, ErasureStore } from '../db/erasures.js';
import { type EntityType, USER } from '../domain/entities.js';
import { KINDS, TYPES } from '../domain/kinds.js';
import { FOLLOW } from '../domain/relations.js';
import { createPersistedMarks } from '../events/caughtUp.js';
import type { Logger } from '../log.js';
import { isCluster } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import type { RelationStore, SetFactInput } from '../relations/relationStore.js';
import { IN_FLIGHT_MS, type Pace, undoFacts } from './undoFacts.js';

export const ERASURE_PHASES = ['posts', 'settle', 'facts', 'followers', 'settle-changes', 'rows', 'redis', 'done'] as const;
export type ErasurePhase = (typeof ERASURE_PHASES)[number];

export interface EraserDeps {
  store: ErasureStore;
  queries: ErasureQueries;
  relations: RelationStore;
  userCounters: UserCounters;
  redis: ScriptedRedis;
  keys: Keys;
  batchSize: number;
  /** How long a batch holds the user's erasure lock at most (a worker that died holding it blocks no longer). */
  batchLockMs: number;
  /** How long after an erasure began every API process refuses the user (src/services/announcements.ts). */
  heardWithinMs: number;
  logger: Logger;
}

export interface BatchOutcome {
  /** The phase the batch ran; null when another run held the user's batch lock. */
  phase: ErasurePhase | null;
  /** Rows or facts this batch changed. */
  changed: number;
  finished: boolean;
  /** The batch could not go on yet (waiting for the persister): try again after a pause. */
  waiting: boolean;
}

const SCAN_COUNT = 1000;

export function createEraser(deps: EraserDeps) {
  const { keys, redis } = deps;
  const persisted = createPersistedMarks(redis, keys);
  const scripts = createScripts(redis, keys);

  async function somethingLeft(userId: number): Promise<boolean> {
    const left = await deps.queries.remaining(userId);
    return left.posts + left.followers + Object.values(left.facts).reduce((a, b) => a + b, 0) > 0;
  }

  /** Where the last batch of a keyset phase (facts, rows) stopped. */
  const cursorOf = (progress: ErasureProgress): OwnFactCursor | null =>
    progress.after ? (JSON.parse(progress.after) as OwnFactCursor) : null;

  const next = (phase: ErasurePhase): ErasurePhase => ERASURE_PHASES[ERASURE_PHASES.indexOf(phase) + 1] ?? 'done';

  /** Sets the user's own active facts inactive, a batch at a time. */
  async function eraseOwnFacts(userId: number, progress: ErasureProgress, pace: Pace): Promise<number> {
    const facts = await deps.queries.ownFacts(userId, cursorOf(progress), deps.batchSize);
    const changes: SetFactInput[] = [];
    for (const fact of facts) {
      const relation = KINDS.named(fact.kind);
      // A fact on a post whose row is gone moves no one's counters; its row goes with the rest.
      if (!relation || !TYPES.has(fact.entityType) || fact.gone) continue;
      const entity = { type: fact.entityType as EntityType, id: fact.entityId };
      changes.push({ userId, entity, relation, authorId: fact.ownerId, active: false });
    }
    const changed = await undoFacts(deps.relations, changes, pace);
    const last = facts.at(-1);
    progress.after = last ? JSON.stringify([last.entityType, last.entityId, last.kind]) : undefined;
    return facts.length === 0 ? -1 : changed;
  }

  /** Sets other users' follows of the user inactive, a batch at a time. */
  async function eraseFollowers(userId: number, progress: ErasureProgress, pace: Pace): Promise<number> {
    const followers = await deps.queries.followers(userId, Number(progress.after ?? 0), deps.batchSize);
    const entity = { type: USER, id: userId };
    const changed = await undoFacts(
      deps.relations,
      followers.map((follower) => ({ userId: follower, entity, relation: FOLLOW, authorId: userId, active: false })),
      pace,
    );
    progress.after = followers.length > 0 ? String(followers.at(-1)) : undefined;
    return followers.length === 0 ? -1 : changed;
  }

  /**
   * Deletes the user's idempotency records (their keys name the user) with SCAN, a page at a
   * time, then their counters and their view window (which posts they viewed lately).
   */
  async function eraseRedisRecords(userId: number, progress: ErasureProgress): Promise<number> {
    const nodes = isCluster(redis) ? redis.nodes('master') : [redis];
    const [nodeIndex = 0, cursor = '0'] = (progress.after ?? '0:0').split(':').map(String);
    const node = nodes[Number(nodeIndex)];
    if (!node) {
      await redis.del(keys.userCounters(userId), keys.userCountersVersion(userId), keys.viewWindow(userId));
      return -1;
    }
    const records = keys.idempotencyRecordsOf(userId);
    const [nextCursor, found] = await node.scan(cursor, 'MATCH', records.match, 'COUNT', SCAN_COUNT);
    const mine = found.filter(records.isOne);
    for (const key of mine) await redis.del(key);
    progress.after = nextCursor === '0' ? `${Number(nodeIndex) + 1}:0` : `${nodeIndex}:${nextCursor}`;
    return mine.length;
  }

  async function runBatchLocked(userId: number, pace: Pace): Promise<BatchOutcome> {
    const row = await deps.store.get(userId);
    if (!row || row.state === 'DONE') return { phase: 'done', changed: 0, finished: true, waiting: false };
    const progress: ErasureProgress = { ...row.progress, done: { ...row.progress.done } };
    const phase = (progress.phase as ErasurePhase | undefined) ?? 'posts';
    let changed = 0;
    let waiting = false;
    let phaseOver = false;
    switch (phase) {
      case 'settle':
      case 'settle-changes': {
        if (phase === 'settle-changes' && Date.now() < row.requestedAt.getTime() + deps.heardWithinMs + IN_FLIGHT_MS) {
          waiting = true;
          break;
        }
        progress.settleAt ??= await persisted.now();
        if (await persisted.passed(progress.settleAt)) {
          phaseOver = true;
          progress.settleAt = undefined;
        } else waiting = true;
        break;
      }
      case 'posts': {
        const { deleted, counters } = await deps.queries.deletePosts(userId, deps.batchSize);
        await deps.userCounters.cache(counters, { changed: true });
        changed = deleted;
        phaseOver = deleted === 0;
        break;
      }
      case 'facts':
      case 'followers': {
        const result = phase === 'facts' ? await eraseOwnFacts(userId, progress, pace) : await eraseFollowers(userId, progress, pace);
        phaseOver = result === -1;
        changed = Math.max(0, result);
        break;
      }
      case 'rows': {
        const { deleted, last, after } = await deps.queries.deleteRows(userId, deps.batchSize, cursorOf(progress));
        changed = deleted;
        phaseOver = last;
        progress.after = after ? JSON.stringify(after) : undefined;
        break;
      }
      case 'redis': {
        const result = await eraseRedisRecords(userId, progress);
        phaseOver = result === -1;
        changed = Math.max(0, result);
        break;
      }
      case 'done':
        break;
    }
    if (changed > 0) progress.done![phase] = (progress.done![phase] ?? 0) + changed;
    if (phaseOver && phase === 'settle-changes' && (await somethingLeft(userId))) {
      // A change that was in flight when the erasure began landed after the facts were read:
      // go round again (the facts phase skips what is already inactive).
      progress.phase = 'facts';
      progress.after = undefined;
    } else if (phaseOver || phase === 'done') {
      progress.phase = next(phase);
      progress.after = undefined;
    } else progress.phase = phase;
    if (progress.phase === 'done') {
      await deps.store.finish(userId, progress);
      deps.logger.info({ userId, done: progress.done }, 'account erased');
      return { phase: 'done', changed, finished: true, waiting: false };
    }
    await deps.store.saveProgress(userId, progress);
    return { phase, changed, finished: false, waiting };
  }

  return {
    /**
     * Runs one batch of the user's erasure and saves where it got to. `pace` is awaited after
     * each chunk of undos, so the caller can spread a batch's events out (src/jobs/pacer.ts).
     */
    async runBatch(userId: number, pace: Pace = async () => {}): Promise<BatchOutcome> {
      // One batch of a user at a time: BullMQ hands a job whose lock it thinks lost (a worker
      // slowed down past JOB_LOCK_MS) to another run while the first goes on. Both would undo
      // the same facts, harmlessly, but each would count only its own share as done.
      const lock = deps.keys.erasureBatchLock(userId);
      const holder = randomUUID();
      if ((await deps.redis.set(lock, holder, 'PX', deps.batchLockMs, 'NX')) !== 'OK') {
        return { phase: null, changed: 0, finished: false, waiting: true };
      }
      try {
        return await runBatchLocked(userId, pace);
      } finally {
        await scripts.releaseLease(lock, holder);
      }
    },
  };
}

export type Eraser = ReturnType<typeof createEraser>;
