// Writes relation facts to PostgreSQL from the event log (consumer group `counter-facts`):
// the durable copy that lists ("who liked this") and recovery read. One transaction per
// batch, or per group of the batches that arrived while the last one committed
// (groupCommit.ts): the facts (a row only ever moves to a newer version, so a redelivered or reordered
// event is harmless), and the user counters the facts that really changed move (a like
// moves its post's author's likesReceived; a follow moves both users). After the commit the
// new counter rows go to the Redis cache, and the partition's persisted position is
// recorded (the user counters' asOf is derived from it).
import type { UserCounters } from '../counters/userCounters.js';
import type { Db } from '../db/client.js';
import { packVersion } from '../db/factVersion.js';
import { type ChangedFact, type VersionedFact, writeFacts } from '../db/factWrites.js';
import { addUserCounts } from '../db/userCounters.js';
import { type UserCounterValues, ZERO_USER_COUNTERS } from '../domain/counters.js';
import { KINDS } from '../domain/kinds.js';
import { userCounterChanges } from '../domain/relations.js';
import { PERSISTER_GROUP } from '../events/groups.js';
import type { EventBatch, EventLog, Subscription } from '../events/types.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { createGroupCommit } from './groupCommit.js';

/**
 * Prisma ends an interactive transaction after 5 s by default. A batch is small and quick,
 * so that only happens behind someone else's lock on relation_facts (a migration, a manual
 * LOCK): then waiting is right, and failing early only makes the batch come round again.
 * Past this long it is abandoned and retried from the pending entries.
 */
const PERSIST_TRANSACTION = { timeout: 30_000, maxWait: 10_000 };

interface FactRow extends VersionedFact {
  /** Who owns the entity (a post's author, the followed user): their received counters move. */
  authorId: number;
}

/** Most facts one group commit writes (writeFacts' statement grows with the square of it). */
const GROUP_MAX_FACTS = 1000;

const factKey = (f: { userId: number; entityType: string; entityId: number; kind: string }) =>
  `${f.userId}|${f.entityType}|${f.entityId}|${f.kind}`;

/** The newest of `rows` per (user, entity, kind): one row each, as one statement requires. */
function newestPerFact(rows: Iterable<FactRow>): FactRow[] {
  const latest = new Map<string, FactRow>();
  for (const row of rows) {
    const seen = latest.get(factKey(row));
    if (!seen || seen.version < row.version) latest.set(factKey(row), row);
  }
  return [...latest.values()];
}

/** The newest state per (user, entity, kind) in a batch. */
export function latestFacts(batch: EventBatch): FactRow[] {
  return newestPerFact(
    batch.entries.map(({ event }) => ({
      userId: event.userId,
      entityType: event.entityType,
      entityId: event.entityId,
      kind: event.relation,
      active: event.delta > 0,
      version: packVersion(event.id),
      at: new Date(event.ts),
      authorId: event.authorId,
    })),
  );
}

/** What the facts that changed do to users' counters (the rule is src/domain/relations.ts). */
function userDeltas(changed: ChangedFact[], rows: FactRow[]): Map<number, UserCounterValues> {
  const deltas = new Map<number, UserCounterValues>();
  const owners = new Map(rows.map((r) => [factKey(r), r.authorId]));
  for (const c of changed) {
    const net = (c.active ? 1 : 0) - (c.wasActive ? 1 : 0);
    const relation = KINDS.named(c.kind);
    const owner = owners.get(factKey(c));
    if (net === 0 || !relation || owner === undefined) continue;
    for (const [who, field, by] of userCounterChanges(relation, owner, c.userId, net > 0 ? 1 : -1)) {
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

  // Batches of different partitions (or the same fact twice, when persist is called beside
  // the subscription) are merged newest-first, so the statement still sees each fact once.
  const writeGroup = createGroupCommit<FactRow>(async (batchRows) => {
    const rows = newestPerFact(batchRows);
    const counterRows = await db.$transaction(
      async (tx) => addUserCounts(tx, userDeltas(await writeFacts(tx, rows), rows)),
      PERSIST_TRANSACTION,
    );
    await deps.userCounters.cache(counterRows, { changed: true });
  }, GROUP_MAX_FACTS);

  async function persist(batch: EventBatch): Promise<number> {
    const rows = latestFacts(batch);
    if (rows.length === 0) return 0;
    await writeGroup(rows);
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
