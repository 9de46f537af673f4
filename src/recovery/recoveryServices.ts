// The recovery side of a process (readiness, entity restores, the recovery run), built the
// same way by the app and by `npm run recover`.
import { createRebuilder } from '../counters/rebuild.js';
import { createUserCounters } from '../counters/userCounters.js';
import type { Db } from '../db/client.js';
import { createFactStore } from '../db/facts.js';
import { createUserCounterStore } from '../db/userCounters.js';
import type { EventLogs } from '../events/eventLog.js';
import type { Logger } from '../log.js';
import type { Keys } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { createEntityRestorer } from './entityRestore.js';
import { createReadiness } from './readiness.js';
import { createRecovery } from './recover.js';

export interface RecoveryServicesDeps {
  redis: ScriptedRedis;
  keys: Keys;
  db: Db;
  logger: Logger;
  /** The deployment's event logs: whether events in them outlive Redis (Kafka), and reached PostgreSQL. */
  eventLogs: Pick<EventLogs, 'durableLogSettled' | 'durableLogWritten'>;
  rebuildLockMs: number;
  /** Entities a recovery walks per page (tests make it small). */
  pageSize?: number;
}

export function createRecoveryServices(deps: RecoveryServicesDeps) {
  const { redis, keys, logger } = deps;
  const facts = createFactStore(deps.db);
  const readiness = createReadiness(redis, keys);
  const rebuilder = createRebuilder({ redis, keys, lockMs: deps.rebuildLockMs });
  const restorer = createEntityRestorer({
    redis,
    keys,
    facts,
    readiness,
    rebuilder,
    durableLogSettled: deps.eventLogs.durableLogSettled,
    logger,
  });
  const userStore = createUserCounterStore(deps.db);
  const userCounters = createUserCounters({ redis, keys, store: userStore });
  const recovery = createRecovery({
    redis,
    keys,
    facts,
    readiness,
    restorer,
    userStore,
    userCounters,
    logger,
    durableLogSettled: deps.eventLogs.durableLogSettled,
    pageSize: deps.pageSize,
  });
  /** Whether anything outlives Redis (facts in PostgreSQL, events in Kafka): then a Redis without its record lost its data. */
  const hasDurableState = async () => (await facts.hasAny()) || (await deps.eventLogs.durableLogWritten());
  return { facts, readiness, restorer, recovery, hasDurableState };
}
