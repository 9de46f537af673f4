// Reconciliation: checks recently active entities (posts and the types a product owns) plus a
// random sample of each, comparing their packed counters with the relation sets and the
// relation sets with PostgreSQL. Counter drift is
// repaired through the rebuild job; fact drift (Redis and PostgreSQL disagree on who liked
// what) is reported: which side is right is an operator's call (`npm run recover` makes Redis
// follow PostgreSQL).

import type { EntityStore } from '../db/entities.js';
import type { FactStore } from '../db/facts.js';
import type { PostStore } from '../db/posts.js';
import { type EntityRef, entityName, POST } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
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
  counterDrift: EntityRef[];
  factDrift: EntityRef[];
}

interface Snapshot {
  entity: EntityRef;
  countersValid: boolean;
  relations: { name: string; counter: number; facts: number; pending: number; inFlight: number }[];
}

export interface ReconcilerDeps {
  redis: ScriptedRedis;
  keys: Keys;
  facts: FactStore;
  posts: PostStore;
  entities: Pick<EntityStore, 'randomLive'>;
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

  /** Entities with events in the newest outbox entries, and a random sample of live posts and owned entities. */
  async function candidates(): Promise<EntityRef[]> {
    const recent = (await recentEvents(redis, keys, RECENT_PER_PARTITION))
      .filter((e) => TYPES.eventCounted.has(e.entityType))
      .map((e) => ({ type: e.entityType, id: e.entityId }));
    const posts = (await deps.posts.randomLiveIds(deps.sampleSize)).map((id) => ({ type: POST, id }));
    const owned = (await deps.entities.randomLive(deps.sampleSize)).filter((e) => TYPES.eventCounted.has(e.type));
    const unique = new Map<string, EntityRef>();
    for (const entity of [...recent, ...posts, ...owned]) unique.set(entityName(entity), { type: entity.type, id: entity.id });
    return [...unique.values()];
  }

  async function inspect(entity: EntityRef): Promise<Snapshot | null> {
    const snapshot = await scripts.inspectCounters({ post: entity, scanLimit: IN_FLIGHT_SCAN_LIMIT });
    return snapshot && { entity, ...snapshot };
  }

  const countersDrifted = (s: Snapshot) => !s.countersValid || s.relations.some((m) => m.counter + m.pending + m.inFlight !== m.facts);

  /** Entities whose bitmap counts differ from PostgreSQL's active facts (one query per type). */
  async function factMismatches(snapshots: Snapshot[]): Promise<EntityRef[]> {
    const mismatched: EntityRef[] = [];
    for (const type of new Set(snapshots.map((s) => s.entity.type))) {
      const ofType = snapshots.filter((s) => s.entity.type === type);
      const rows = await deps.facts.counts(
        type,
        ofType.map((s) => s.entity.id),
      );
      const durable = (id: number, kind: string) => rows.find((r) => r.entityId === id && r.kind === kind)?.count ?? 0;
      for (const s of ofType) if (s.relations.some((m) => m.facts !== durable(s.entity.id, m.name))) mismatched.push(s.entity);
    }
    return mismatched;
  }

  /** Partitions whose persister has written everything the outbox holds. */
  async function persistedPartitions(): Promise<Set<number>> {
    return caughtUpPartitions(await deps.eventLog.lag(), PERSISTER_GROUP);
  }

  return {
    async run(): Promise<ReconcileReport> {
      const notReady = new Set(await deps.notReady());
      const entities = (await candidates()).filter((entity) => !notReady.has(keys.partitionOf(entity)));
      const persisted = await persistedPartitions();
      const snapshots = (await Promise.all(entities.map(inspect))).filter((s): s is Snapshot => s !== null);

      const counterDrift = snapshots.filter(countersDrifted).map((s) => s.entity);
      for (const entity of counterDrift) deps.requestRebuild(entity);

      // Facts are comparable where nothing is in flight and the persister has caught up.
      const settled = (s: Snapshot) => persisted.has(keys.partitionOf(s.entity)) && s.relations.every((m) => m.inFlight === 0);
      let suspects = await factMismatches(snapshots.filter(settled));
      if (suspects.length > 0) {
        await new Promise((r) => setTimeout(r, FACT_RECHECK_MS));
        const again = (await Promise.all(suspects.map(inspect))).filter((s): s is Snapshot => s !== null && settled(s));
        suspects = await factMismatches(again);
      }

      const report = { checked: snapshots.length, skipped: entities.length - snapshots.length, counterDrift, factDrift: suspects };
      deps.metrics.reconciledEntities.inc(report.checked);
      deps.metrics.drift.inc({ kind: 'counters' }, counterDrift.length);
      deps.metrics.drift.inc({ kind: 'facts' }, suspects.length);
      const level = counterDrift.length + suspects.length > 0 ? 'warn' : 'info';
      deps.logger[level](
        {
          checked: report.checked,
          skipped: report.skipped,
          counterDrift: counterDrift.map(entityName),
          factDrift: suspects.map(entityName),
        },
        'reconciliation finished',
      );
      return report;
    },
  };
}

export type Reconciler = ReturnType<typeof createReconciler>;
