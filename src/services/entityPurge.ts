// Removing what a deleted entity a product owns leaves behind, DELETED_ENTITY_RETENTION_MS
// after its deletion (a scheduled worker job runs `run`). Until then its facts stay and keep
// counting in its likers' and owner's counters; then every active fact on it is set inactive
// through the relation store (src/services/undoFacts.ts), so each of those counters moves by
// exactly its share, and once its own counters have folded down to zero they are deleted,
// with its views (counters, sketch and PostgreSQL row).
//
// Each run starts again from PostgreSQL once the fact persister has written every event from
// before the run: facts undone by an earlier run are then inactive there, so a run needs no
// saved position, and an entity is done when PostgreSQL holds no active fact on it.
import type { PostCounters } from '../counters/postCounters.js';
import type { EntityStore } from '../db/entities.js';
import type { FactStore } from '../db/facts.js';
import type { ViewStore } from '../db/views.js';
import { VIEW_SLOTS } from '../domain/counters.js';
import { type EntityRef, entityName } from '../domain/entities.js';
import { KINDS } from '../domain/kinds.js';
import { NO_OWNER } from '../domain/relations.js';
import { createPersistedMarks } from '../events/caughtUp.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import type { RelationStore, SetFactInput } from '../relations/relationStore.js';
import { IN_FLIGHT_MS, undoFacts } from './undoFacts.js';

export interface EntityPurgeDeps {
  entities: EntityStore;
  facts: FactStore;
  views: Pick<ViewStore, 'delete'>;
  relations: RelationStore;
  postCounters: Pick<PostCounters, 'loadEntities'>;
  redis: ScriptedRedis;
  keys: Keys;
  retentionMs: number;
  /** How long after a deletion every API process refuses the entity. */
  heardWithinMs: number;
  /** Facts one run removes at most. */
  batch: number;
  logger: Logger;
}

export interface PurgeOutcome {
  /** Entities whose facts and counters are now gone. */
  purged: number;
  /** Facts set inactive by this run. */
  undone: number;
}

/** Deleted entities one run looks at. */
const ENTITIES_PER_RUN = 100;
/** How long a run waits for the persister to pass its mark before leaving it to the next. */
const SETTLE_MS = 10_000;
const SETTLE_POLL_MS = 100;
/** Slots that hold views, not the facts' counts: they need not fold to zero. */
const VIEW_SLOT_NUMBERS: readonly number[] = Object.values(VIEW_SLOTS);

export function createEntityPurge(deps: EntityPurgeDeps) {
  const persisted = createPersistedMarks(deps.redis, deps.keys);

  /** Whether PostgreSQL holds every event accepted before now (within SETTLE_MS). */
  async function settled(): Promise<boolean> {
    const mark = await persisted.now();
    const deadline = Date.now() + SETTLE_MS;
    while (!(await persisted.passed(mark))) {
      if (Date.now() > deadline) return false;
      await new Promise((resolve) => setTimeout(resolve, SETTLE_POLL_MS));
    }
    return true;
  }

  /**
   * Deletes the entity's counters once the facts' counts folded down to zero (nothing left to
   * fold), and its views and reaction index with them; false while not yet.
   */
  async function dropCounters(entity: EntityRef): Promise<boolean> {
    const [counts] = await deps.postCounters.loadEntities([entity]);
    if (counts?.slots.some((n, slot) => n !== 0 && !VIEW_SLOT_NUMBERS.includes(slot))) return false;
    if ((await deps.redis.exists(deps.keys.agg(entity))) > 0) return false;
    const { keys, redis } = deps;
    await redis.srem(keys.viewsPending(keys.partitionOf(entity)), entityName(entity));
    await deps.views.delete(entity.type, entity.id);
    // An index past its size keeps its overflow field after the last reaction is undone.
    await redis.del(keys.counters(entity), keys.viewers(entity), keys.reactionIndex(entity));
    return true;
  }

  return {
    async run(): Promise<PurgeOutcome> {
      const outcome: PurgeOutcome = { purged: 0, undone: 0 };
      // A like accepted just before its process heard of the deletion is in the outbox by then.
      const cutoff = new Date(Date.now() - deps.retentionMs - deps.heardWithinMs - IN_FLIGHT_MS);
      const due = await deps.entities.duePurge(cutoff, ENTITIES_PER_RUN);
      if (due.length === 0 || !(await settled())) return outcome;
      let budget = deps.batch;
      for (const row of due) {
        if (budget <= 0) break;
        const entity = { type: row.type, id: row.id };
        const active = await deps.facts.activeOf(entity.type, entity.id, null, budget);
        if (active.length === 0) {
          if (await dropCounters(entity)) {
            await deps.entities.markPurged(row.id);
            outcome.purged++;
          }
          continue;
        }
        const changes: SetFactInput[] = [];
        for (const fact of active) {
          const relation = KINDS.named(fact.kind);
          if (relation) changes.push({ userId: fact.userId, entity, relation, authorId: row.ownerId ?? NO_OWNER, active: false });
        }
        outcome.undone += await undoFacts(deps.relations, changes, async () => {});
        budget -= active.length;
      }
      if (outcome.purged + outcome.undone > 0) deps.logger.info(outcome, 'purged deleted entities');
      return outcome;
    },
  };
}

export type EntityPurge = ReturnType<typeof createEntityPurge>;
