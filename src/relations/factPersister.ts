// Writes relation facts to PostgreSQL from the event log (consumer group `counter-facts`):
// the durable copy that lists ("who liked this") and recovery read. One transaction per
// batch: the facts (a row only ever moves to a newer version, so a redelivered or reordered
// event is harmless), and the user counters the facts that really changed move (a like
// moves its post's author's likesReceived; a follow moves both users). After the commit the
// new counter rows go to the Redis cache, and the partition's persisted position is
// recorded (the user counters' asOf is derived from it).
import type { UserCounters } from '../counters/userCounters.js';
import type { Db } from '../db/client.js';
import { addUserCounts } from '../db/userCounters.js';
import { type UserCounterValues, ZERO_USER_COUNTERS } from '../domain/counters.js';
import { relationNamed, userCounterChanges } from '../domain/relations.js';
import type { EventBatch, EventLog, Subscription } from '../events/types.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { packVersion } from './factVersion.js';

export const PERSISTER_GROUP = 'counter-facts';

/**
 * Prisma ends an interactive transaction after 5 s by default. A batch is small and quick,
 * so that only happens behind someone else's lock on relation_facts (a migration, a manual
 * LOCK): then waiting is right, and failing early only makes the batch come round again.
 * Past this long it is abandoned and retried from the pending entries.
 */
const PERSIST_TRANSACTION = { timeout: 30_000, maxWait: 10_000 };

interface FactRow {
  userId: number;
  entityType: string;
  entityId: number;
  kind: string;
  active: boolean;
  version: bigint;
  at: Date;
  authorId: number;
}

const factKey = (userId: number, entityType: string, entityId: number, kind: string) => `${userId}|${entityType}|${entityId}|${kind}`;

/** The newest state per (user, entity, kind) in a batch: one row each, as one statement requires. */
export function latestFacts(batch: EventBatch): FactRow[] {
  const latest = new Map<string, FactRow>();
  for (const { event } of batch.entries) {
    const key = factKey(event.userId, event.entityType, event.entityId, event.relation);
    const version = packVersion(event.id);
    const seen = latest.get(key);
    if (seen && seen.version >= version) continue;
    latest.set(key, {
      userId: event.userId,
      entityType: event.entityType,
      entityId: event.entityId,
      kind: event.relation,
      active: event.delta > 0,
      version,
      at: new Date(event.ts),
      authorId: event.authorId,
    });
  }
  return [...latest.values()];
}

interface Changed {
  user_id: bigint;
  entity_type: string;
  entity_id: bigint;
  kind: string;
  active: boolean;
  was_active: boolean;
}

/** What the facts that changed do to users' counters (the rule is src/domain/relations.ts). */
function userDeltas(changed: Changed[], rows: FactRow[]): Map<number, UserCounterValues> {
  const deltas = new Map<number, UserCounterValues>();
  const owners = new Map(rows.map((r) => [factKey(r.userId, r.entityType, r.entityId, r.kind), r.authorId]));
  for (const c of changed) {
    const net = (c.active ? 1 : 0) - (c.was_active ? 1 : 0);
    const relation = relationNamed(c.kind);
    if (net === 0 || !relation) continue;
    const [userId, entityId] = [Number(c.user_id), Number(c.entity_id)];
    const owner = owners.get(factKey(userId, c.entity_type, entityId, c.kind));
    if (owner === undefined) continue;
    for (const [who, field, by] of userCounterChanges(relation, owner, userId, net > 0 ? 1 : -1)) {
      const d = deltas.get(who) ?? { ...ZERO_USER_COUNTERS };
      d[field] += by;
      deltas.set(who, d);
    }
  }
  return deltas;
}

export interface FactPersisterDeps {
  db: Db;
  redis: ScriptedRedis;
  keys: Keys;
  userCounters: UserCounters;
  logger: Logger;
}

export function createFactPersister(deps: FactPersisterDeps) {
  const { db, logger } = deps;
  const scripts = createScripts(deps.redis, deps.keys);

  async function persist(batch: EventBatch): Promise<number> {
    const rows = latestFacts(batch);
    if (rows.length === 0) return 0;
    const counterRows = await db.$transaction(async (tx) => {
      const changed = await tx.$queryRaw<Changed[]>`
        WITH incoming AS (
          SELECT * FROM unnest(
            ${rows.map((r) => String(r.userId))}::bigint[],
            ${rows.map((r) => r.entityType)}::varchar[],
            ${rows.map((r) => String(r.entityId))}::bigint[],
            ${rows.map((r) => r.kind)}::varchar[],
            ${rows.map((r) => r.active)}::boolean[],
            ${rows.map((r) => String(r.version))}::bigint[],
            ${rows.map((r) => r.at.toISOString())}::timestamptz[]
          ) AS i(user_id, entity_type, entity_id, kind, active, version, updated_at)
        ),
        before AS (
          SELECT f.user_id, f.entity_type, f.entity_id, f.kind, f.active
          FROM relation_facts f JOIN incoming USING (user_id, entity_type, entity_id, kind)
        ),
        written AS (
          INSERT INTO relation_facts (user_id, entity_type, entity_id, kind, active, version, updated_at)
          SELECT user_id, entity_type, entity_id, kind, active, version, updated_at FROM incoming
          ON CONFLICT (user_id, entity_type, entity_id, kind) DO UPDATE
            SET active = EXCLUDED.active, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
            WHERE relation_facts.version < EXCLUDED.version
          RETURNING user_id, entity_type, entity_id, kind, active
        )
        SELECT w.user_id, w.entity_type, w.entity_id, w.kind, w.active, COALESCE(b.active, false) AS was_active
        FROM written w LEFT JOIN before b USING (user_id, entity_type, entity_id, kind)`;
      return addUserCounts(tx, userDeltas(changed, rows));
    }, PERSIST_TRANSACTION);
    await deps.userCounters.cache(counterRows);
    await scripts.raisePosition(deps.keys.persisted(batch.partition), batch.entries.at(-1)!.event.id);
    return rows.length;
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
