// Counts and viewer state answered from PostgreSQL's relation facts (and its persisted
// views), for pages read while Redis is being recovered. One SQL query per page for each. The counts lag the facts by the
// persister's lag, so they carry no asOf: they are the best answer, not a promise.

import type { PostCounts } from '../counters/postCounters.js';
import type { FactStore } from '../db/facts.js';
import type { ViewStore } from '../db/views.js';
import { COUNTER_SLOTS, VIEW_SLOTS } from '../domain/counters.js';
import { type EntityType, POST, USER } from '../domain/entities.js';
import { KINDS } from '../domain/kinds.js';
import { FOLLOW } from '../domain/relations.js';
import type { ViewerState } from '../relations/relationStore.js';

export function createDurableReads(facts: FactStore, views: ViewStore) {
  return {
    /** Counts of posts (or of entities of another counted type). */
    async counts(postIds: readonly number[], type: EntityType = POST): Promise<PostCounts[]> {
      const [rows, viewed] = await Promise.all([facts.counts(type, postIds), views.of(type, postIds)]);
      return postIds.map((id) => {
        const slots = new Array<number>(COUNTER_SLOTS).fill(0);
        for (const row of rows) {
          const slot = row.entityId === id ? KINDS.named(row.kind)?.slot : null;
          if (slot != null) slots[slot] = row.count;
        }
        const view = viewed.find((v) => v.entityId === id);
        if (view) [slots[VIEW_SLOTS.total], slots[VIEW_SLOTS.unique]] = [view.total, view.viewers];
        return { slots, asOf: null };
      });
    },

    async follows(viewerId: number, userIds: readonly number[]): Promise<boolean[]> {
      const rows = await facts.activeFor(viewerId, USER, userIds);
      return userIds.map((id) => rows.some((r) => r.entityId === id && r.kind === FOLLOW.name));
    },

    /** The viewer's state on posts (or on entities of another type). */
    async viewerStates(userId: number, postIds: readonly number[], type: EntityType = POST): Promise<ViewerState[]> {
      const rows = await facts.activeFor(userId, type, postIds);
      return postIds.map((id) => new Set(rows.filter((r) => r.entityId === id && KINDS.named(r.kind)).map((r) => r.kind)));
    },
  };
}

export type DurableReads = ReturnType<typeof createDurableReads>;
