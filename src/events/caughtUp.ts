// Whether the event log's consumers have caught up: decided here only, for reconciliation
// (which partitions' facts are comparable), erasure (has every change before a moment reached
// PostgreSQL), recovery (have the events that outlived Redis in Kafka reached it) and the
// tests' waits.

import type { RedisClient } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';
import { PERSISTER_GROUP } from './groups.js';
import { comparePositions, type EventLog, type GroupLag } from './types.js';

/** Partitions in which `group` has handled everything delivered so far: nothing pending, nothing undelivered. */
export function caughtUpPartitions(lags: readonly GroupLag[], group: string): Set<number> {
  return new Set(lags.filter((l) => l.group === group && l.pending === 0 && l.undelivered === 0).map((l) => l.partition));
}

/** Whether `group` has caught up in every partition the log reports (a group missing from one has not). */
export function caughtUpEverywhere(lags: readonly GroupLag[], group: string): boolean {
  const done = caughtUpPartitions(lags, group);
  return lags.every((l) => done.has(l.partition));
}

/** Where each partition's outbox ends: a mark the persister must pass (it is plain data, so it can be saved). */
export type OutboxMark = string[];

/**
 * Marks taken on the outbox and checked against the persister's own watermarks
 * (`persisted:{pN}`): "has every event accepted before the mark reached PostgreSQL?", in
 * both event-log modes (the relay carries the outbox ids into Kafka).
 */
export function createPersistedMarks(redis: RedisClient, keys: Keys) {
  return {
    async now(): Promise<OutboxMark> {
      return Promise.all(
        Array.from({ length: keys.partitions }, async (_, p) => {
          const [last] = (await redis.xrevrange(keys.outbox(p), '+', '-', 'COUNT', 1)) as [string, string[]][];
          return last?.[0] ?? '0-0';
        }),
      );
    },

    async passed(mark: OutboxMark): Promise<boolean> {
      const persisted = await Promise.all(mark.map((_, p) => redis.get(keys.persisted(p))));
      return mark.every((end, p) => end === '0-0' || comparePositions(persisted[p] ?? '0-0', end) >= 0);
    },
  };
}

/**
 * Whether the fact persister has written to PostgreSQL every event that reached the consumed
 * log (Kafka) before Redis lost its data: those events outlived Redis, and restoring facts
 * from PostgreSQL before they arrive there would lose them. The mark is the log's end when
 * first asked; once passed it holds for a while (later events are of entities already restored).
 */
export function persistedUpToNow(log: EventLog, holdMs = 30_000) {
  let check: (() => Promise<boolean>) | null = null;
  let settledUntil = 0;
  return async (): Promise<boolean> => {
    if (Date.now() < settledUntil) return true;
    check ??= (await log.consumedUpToNow?.(PERSISTER_GROUP)) ?? (async () => true);
    if (!(await check())) return false;
    check = null;
    settledUntil = Date.now() + holdMs;
    return true;
  };
}
