// Writes relation facts to PostgreSQL from the event log (consumer group `counter-facts`):
// the durable copy that lists ("who liked this") and recovery read. One statement per batch;
// a row only ever moves to a newer version, so a redelivered or reordered event is harmless.
import type { Db } from '../db/client.js';
import type { EventBatch, EventLog, Subscription } from '../events/types.js';
import type { Logger } from '../log.js';
import { packVersion } from './factVersion.js';

export const PERSISTER_GROUP = 'counter-facts';

interface FactRow {
  userId: number;
  entityType: string;
  entityId: number;
  kind: string;
  active: boolean;
  version: bigint;
  at: Date;
}

/** The newest state per (user, entity, kind) in a batch: one row each, as one statement requires. */
export function latestFacts(batch: EventBatch): FactRow[] {
  const latest = new Map<string, FactRow>();
  for (const { event } of batch.entries) {
    const key = `${event.userId}|${event.entityType}|${event.entityId}|${event.metric}`;
    const version = packVersion(event.id);
    const seen = latest.get(key);
    if (seen && seen.version >= version) continue;
    latest.set(key, {
      userId: event.userId,
      entityType: event.entityType,
      entityId: event.entityId,
      kind: event.metric,
      active: event.delta > 0,
      version,
      at: new Date(event.ts),
    });
  }
  return [...latest.values()];
}

export function createFactPersister(deps: { db: Db; logger: Logger }) {
  const { db, logger } = deps;

  async function persist(batch: EventBatch): Promise<number> {
    const rows = latestFacts(batch);
    if (rows.length === 0) return 0;
    return db.$executeRaw`
      INSERT INTO relation_facts (user_id, entity_type, entity_id, kind, active, version, updated_at)
      SELECT * FROM unnest(
        ${rows.map((r) => String(r.userId))}::bigint[],
        ${rows.map((r) => r.entityType)}::varchar[],
        ${rows.map((r) => String(r.entityId))}::bigint[],
        ${rows.map((r) => r.kind)}::varchar[],
        ${rows.map((r) => r.active)}::boolean[],
        ${rows.map((r) => String(r.version))}::bigint[],
        ${rows.map((r) => r.at.toISOString())}::timestamptz[]
      )
      ON CONFLICT (user_id, entity_type, entity_id, kind) DO UPDATE
        SET active = EXCLUDED.active, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
        WHERE relation_facts.version < EXCLUDED.version`;
  }

  return {
    persist,

    subscribe(eventLog: EventLog): Subscription {
      return eventLog.subscribe(PERSISTER_GROUP, async (batch) => {
        const written = await persist(batch);
        logger.debug({ partition: batch.partition, events: batch.entries.length, written }, 'persisted facts');
      });
    },
  };
}

export type FactPersister = ReturnType<typeof createFactPersister>;
