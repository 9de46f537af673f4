// Counts and viewer state answered from PostgreSQL's relation facts, for pages read while
// Redis is being recovered. One SQL query per page for each. The counts lag the facts by the
// persister's lag, so they carry no asOf: they are the best answer, not a promise.

import type { PostCounts } from '../counters/postCounters.js';
import type { FactStore } from '../db/facts.js';
import { POST, USER } from '../domain/entities.js';
import { FOLLOW, POST_RELATIONS } from '../domain/relations.js';
import type { ViewerState } from '../relations/relationStore.js';

export function createDurableReads(facts: FactStore) {
  return {
    async counts(postIds: readonly number[]): Promise<PostCounts[]> {
      const rows = await facts.counts(POST, postIds);
      const count = (id: number, kind: string) => rows.find((r) => r.entityId === id && r.kind === kind)?.count ?? 0;
      return postIds.map((id) => ({ likes: count(id, POST_RELATIONS.LIKE.name), favs: count(id, POST_RELATIONS.FAV.name), asOf: null }));
    },

    async follows(viewerId: number, userIds: readonly number[]): Promise<boolean[]> {
      const rows = await facts.activeFor(viewerId, USER, userIds);
      return userIds.map((id) => rows.some((r) => r.entityId === id && r.kind === FOLLOW.name));
    },

    async viewerStates(userId: number, postIds: readonly number[]): Promise<ViewerState[]> {
      const rows = await facts.activeFor(userId, POST, postIds);
      const has = (id: number, kind: string) => rows.some((r) => r.entityId === id && r.kind === kind);
      return postIds.map((id) => ({ liked: has(id, POST_RELATIONS.LIKE.name), faved: has(id, POST_RELATIONS.FAV.name) }));
    },
  };
}

export type DurableReads = ReturnType<typeof createDurableReads>;
