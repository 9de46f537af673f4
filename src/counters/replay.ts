// Replay (`npm run replay`): recomputes every entity's counters from the event log's history
// into a fresh set of keys, then switches each entity to them atomically (see
// lua/switchReplayedCounters-4.lua) while the service keeps running. For when counters are
// known to be corrupt and the relation sets cannot be trusted either; it needs the log's whole
// history, so it refuses when events were ever trimmed (use rebuild or recovery then).
import { USER } from '../domain/entities.js';
import { comparePositions, type EventLog, type LogEntry } from '../events/types.js';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { sumByEntity } from './eventSums.js';

const SWITCH_BATCH = 500;
/** Sums of an interrupted replay expire on their own. */
const SUMS_TTL_S = 24 * 3600;

export class ReplayRefused extends Error {
  override name = 'ReplayRefused';
}

export interface ReplayProgress {
  partition: number;
  events: number;
  switched: number;
}

export interface ReplayErasures {
  /** Erasures still running: replay waits for them (their undo events are still coming). */
  running(): Promise<readonly unknown[]>;
  /** Users on the erasure list: their events are not counted (their effect was undone). */
  allIds(): Promise<Set<number>>;
}

export function createReplay(deps: { redis: ScriptedRedis; keys: Keys; eventLog: EventLog; erasures: ReplayErasures }) {
  const { redis, keys, eventLog } = deps;
  const scripts = createScripts(redis, keys);

  /** Drops what an interrupted earlier replay of this partition left behind. */
  async function clearSums(p: number) {
    const entities = await redis.smembers(keys.replayedEntities(p));
    for (let i = 0; i < entities.length; i += 1000) {
      await redis.del(...entities.slice(i, i + 1000).map((e) => keys.replayedPrefix(p) + e));
    }
    await redis.del(keys.replayedEntities(p));
  }

  /** Sums one page of a partition's history into the fresh keys. */
  async function addToSums(p: number, entries: LogEntry[]) {
    const writes: Promise<unknown>[] = [];
    for (const { name, deltas } of sumByEntity(entries)) {
      const key = keys.replayedPrefix(p) + name;
      writes.push(redis.sadd(keys.replayedEntities(p), name));
      for (const [slot, delta] of deltas) writes.push(redis.hincrby(key, String(slot), delta));
      writes.push(redis.expire(key, SUMS_TTL_S));
    }
    await Promise.all(writes);
  }

  /** Switches every replayed entity of a partition, in bounded atomic batches. */
  async function switchPartition(p: number, through: string, events: number, report: (progress: ReplayProgress) => void) {
    let switched = 0;
    for (;;) {
      const { switched: now, left } = await scripts.switchReplayedCounters({ partition: p, through, limit: SWITCH_BATCH });
      switched += now;
      report({ partition: p, events, switched });
      if (left === 0) return;
    }
  }

  return {
    async run(options: { onProgress?: (progress: ReplayProgress) => void } = {}) {
      if (!(await eventLog.historyComplete())) {
        throw new ReplayRefused(
          'the event log no longer holds the whole history (events were trimmed, or Redis lost its data), ' +
            'so a replay would count only part of it. Rebuild from the facts instead (reconciliation does it, or `npm run recover`).',
        );
      }
      if ((await deps.erasures.running()).length > 0) {
        throw new ReplayRefused('an account erasure is running; replay once it has finished (npm run erase -- --status)');
      }
      // An erased user's likes and follows were undone by the erasure's own events; leaving all
      // of their events out gives the same counts, and never brings them back.
      const erased = await deps.erasures.allIds();
      const counted = (e: LogEntry) => !erased.has(e.event.userId) && !(e.event.entityType === USER && erased.has(e.event.entityId));
      const report = options.onProgress ?? (() => {});
      for (let p = 0; p < keys.partitions; p++) await clearSums(p);
      // Newest event replayed per partition: the switch corrects for everything after it.
      const through = new Map<number, string>();
      const events = new Map<number, number>();
      await eventLog.readHistory(async (p, page) => {
        // A relay that crashed before acknowledging re-sends events: within a partition event
        // ids only grow, so anything not newer than what was summed is a duplicate.
        const seen = through.get(p);
        const entries = seen ? page.filter((e) => comparePositions(e.event.id, seen) > 0) : page;
        if (entries.length === 0) return;
        await addToSums(p, entries.filter(counted));
        through.set(p, entries.at(-1)!.event.id);
        events.set(p, (events.get(p) ?? 0) + entries.length);
        report({ partition: p, events: events.get(p)!, switched: 0 });
      });
      for (const [p, id] of [...through].sort(([a], [b]) => a - b)) await switchPartition(p, id, events.get(p)!, report);
    },
  };
}
