// Consumes counter events and adds them up: a batch is summed in memory per entity and
// field, then applied to the partition's aggregation hashes in one Lua call that also
// records the batch's position, so a redelivered batch is skipped rather than counted twice.
import type { Logger } from 'pino';
import { sumByEntity } from '../counters/eventSums.js';
import { entityName } from '../domain/entities.js';
import { AGGREGATOR_GROUP } from '../events/groups.js';
import { comparePositions, type EventBatch, type EventLog, type LogEntry, type Subscription } from '../events/types.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

const MAX_ATTEMPTS = 8;

const entityOf = (entry: LogEntry) => entityName({ type: entry.event.entityType, id: entry.event.entityId });

export function createAggregator(deps: { redis: ScriptedRedis; keys: Keys; logger: Logger }) {
  const { logger } = deps;
  const scripts = createScripts(deps.redis, deps.keys);

  /** Applies one batch exactly once (safe to call again with the same or an overlapping batch). */
  async function applyBatch(batch: EventBatch): Promise<'applied' | 'skipped'> {
    const { partition, source } = batch;
    let entries = batch.entries;
    for (let attempt = 0; attempt < MAX_ATTEMPTS && entries.length > 0; attempt++) {
      const sums = sumByEntity(entries);
      const result = await scripts.applyCounterBatch({
        partition,
        source,
        firstPosition: entries[0]!.position,
        lastPosition: entries.at(-1)!.position,
        newestEvent: entries.reduce((newest, e) => (comparePositions(e.event.id, newest) > 0 ? e.event.id : newest), '0-0'),
        sums,
      });
      switch (result.outcome) {
        case 'applied':
          return 'applied';
        case 'skipped':
          return 'skipped';
        case 'partly applied':
          // Part of this batch was applied before (redelivery after a crash): keep the rest.
          entries = entries.filter((e) => comparePositions(e.position, result.applied) > 0);
          break;
        case 'entity rebuilt':
          // The entity was rebuilt from facts mid-batch: its events up to the watermark are counted.
          entries = entries.filter((e) => entityOf(e) !== result.entity || comparePositions(e.event.id, result.watermark) > 0);
          break;
      }
    }
    if (entries.length === 0) return 'skipped';
    throw new Error(`batch for partition ${partition} could not be applied after ${MAX_ATTEMPTS} attempts`);
  }

  return {
    applyBatch,

    /** Subscribes to the event log as group `counter-agg`. */
    subscribe(eventLog: EventLog): Subscription {
      return eventLog.subscribe(AGGREGATOR_GROUP, async (batch) => {
        const outcome = await applyBatch(batch);
        logger.debug({ partition: batch.partition, events: batch.entries.length, outcome }, 'aggregated batch');
      });
    },
  };
}

export type Aggregator = ReturnType<typeof createAggregator>;
