// Events added up per entity and counter slot: what the aggregator applies to the counters, and
// what replay recomputes them from.
import { entityName } from '../domain/entities.js';
import { TYPES } from '../domain/kinds.js';
import type { LogEntry } from '../events/types.js';
import type { EntityDeltas } from '../redis/scripts.js';

/** The entries' net changes per entity with event-counted packed counters, in the order entities first appear. */
export function sumByEntity(entries: readonly LogEntry[]): EntityDeltas[] {
  const sums = new Map<string, EntityDeltas>();
  for (const { event } of entries) {
    if (!TYPES.eventCounted.has(event.entityType) || event.slot === null) continue;
    const name = entityName({ type: event.entityType, id: event.entityId });
    let sum = sums.get(name);
    if (!sum) {
      sum = { name, firstEvent: event.id, lastEvent: event.id, deltas: new Map() };
      sums.set(name, sum);
    }
    sum.lastEvent = event.id;
    sum.deltas.set(event.slot, (sum.deltas.get(event.slot) ?? 0) + event.delta);
  }
  return [...sums.values()];
}
