// Reconciliation: checks recently active posts plus a random sample, comparing their packed
// counters with the relation sets and the relation sets with PostgreSQL. Counter drift is
// repaired through the rebuild job; fact drift (Redis and PostgreSQL disagree on who liked
// what) is reported: which side is right is an operator's call (`npm run recover` makes Redis
// follow PostgreSQL).

import type { FactStore } from '../db/facts.js';
import type { PostStore } from '../db/posts.js';
import { type EntityRef, POST } from '../domain/entities.js';
import { caughtUpPartitions } from '../events/caughtUp.js';
import { PERSISTER_GROUP } from '../events/groups.js';
import { recentEvents } from '../events/recentEvents.js';
import type { EventLog } from '../events/types.js';
import type { Logger } from '../log.js';
import type { Metrics } from '../metrics.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

const RECENT_PER_PARTITION = 200;
const IN_FLIGHT_SCAN_LIMIT = 5000;
/** A fact mismatch must still be there this much later to count (a write may land between the reads). */
const FACT_RECHECK_MS = 1000;

export interface ReconcileReport {
  checked: number;
  skipped: number;
  counterDrift: number[];
  factDrift: number[];
}

interface Snapshot {
  postId: number;
  countersValid: boolean;
  relations: { name: string; counter: number; facts: number; pending: number; inFlight: number }[];
}

export interface ReconcilerDeps {
  redis: ScriptedRedis;
  keys: Keys;
  facts: FactStore;
  posts: PostStore;
  eventLog: EventLog;
  requestRebuild: (entity: EntityRef) => void;
  /** Partitions whose facts Redis lost and has not restored: nothing there to compare yet. */
  notReady: () => Promise<number[]>;
  metrics: Metrics;
  logger: Logger;
  sampleSize: number;
}

export function createReconciler(deps: ReconcilerDeps) {
  const { redis, keys } = deps;
  const scripts = createScripts(redis, keys);

  /** Posts with events in the newest outbox entries, and a random sample of live posts. */
  async function candidates(): Promise<number[]> {
    const recent = (await recentEvents(redis, keys, RECENT_PER_PARTITION)).filter((e) => e.entityType === POST).map((e) => e.entityId);
    const sample = await deps.posts.randomLiveIds(deps.sampleSize);
    return [...new Set([...recent, ...sample])];
  }

  async function inspect(postId: number): Promise<Snapshot | null> {
    const snapshot = await scripts.inspectCounters({ post: { type: POST, id: postId }, scanLimit: IN_FLIGHT_SCAN_LIMIT });
    return snapshot && { postId, ...snapshot };
  }

  const countersDrifted = (s: Snapshot) => !s.countersValid || s.relations.some((m) => m.counter + m.pending + m.inFlight !== m.facts);

  /** Posts whose bitmap counts differ from PostgreSQL's active facts. */
  async function factMismatches(snapshots: Snapshot[]): Promise<number[]> {
    if (snapshots.length === 0) return [];
    const rows = await deps.facts.counts(
      POST,
      snapshots.map((s) => s.postId),
    );
    const durable = (id: number, kind: string) => rows.find((r) => r.entityId === id && r.kind === kind)?.count ?? 0;
    return snapshots.filter((s) => s.relations.some((m) => m.facts !== durable(s.postId, m.name))).map((s) => s.postId);
  }

  /** Partitions whose persister has written everything the outbox holds. */
  async function persistedPartitions(): Promise<Set<number>> {
    return caughtUpPartitions(await deps.eventLog.lag(), PERSISTER_GROUP);
  }

  return {
    async run(): Promise<ReconcileReport> {
      const notReady = new Set(await deps.notReady());
      const ids = (await candidates()).filter((id) => !notReady.has(keys.partitionOf({ type: POST, id })));
      const persisted = await persistedPartitions();
      const snapshots = (await Promise.all(ids.map(inspect))).filter((s): s is Snapshot => s !== null);

      const counterDrift = snapshots.filter(countersDrifted).map((s) => s.postId);
      for (const id of counterDrift) deps.requestRebuild({ type: POST, id });

      // Facts are comparable where nothing is in flight and the persister has caught up.
      const settled = (s: Snapshot) =>
        persisted.has(keys.partitionOf({ type: POST, id: s.postId })) && s.relations.every((m) => m.inFlight === 0);
      let suspects = await factMismatches(snapshots.filter(settled));
      if (suspects.length > 0) {
        await new Promise((r) => setTimeout(r, FACT_RECHECK_MS));
        const again = (await Promise.all(suspects.map(inspect))).filter((s): s is Snapshot => s !== null && settled(s));
        suspects = await factMismatches(again);
      }

      const report = { checked: snapshots.length, skipped: ids.length - snapshots.length, counterDrift, factDrift: suspects };
      deps.metrics.reconciledEntities.inc(report.checked);
      deps.metrics.drift.inc({ kind: 'counters' }, counterDrift.length);
      deps.metrics.drift.inc({ kind: 'facts' }, suspects.length);
      const level = counterDrift.length + suspects.length > 0 ? 'warn' : 'info';
      deps.logger[level](
        { checked: report.checked, skipped: report.skipped, counterDrift, factDrift: suspects },
        'reconciliation finished',
      );
      return report;
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
