// Keeps a background job to its share of the machine: after every few milliseconds of work
// it sleeps in proportion to how long the work took. The work then reaches Redis, the event
// log and PostgreSQL as a steady trickle; a 100 ms burst of 200 undos every second put others'
// feed and like requests in a queue behind it (their p99, docs/performance.md#account-erasure).
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Work runs in chunks of about this long between sleeps: short enough to hold up someone's
 * request by a few milliseconds at most, long enough that a timer is not set per step.
 */
const CHUNK_MS = 5;

export interface Pacer {
  /** Called between steps of the work: sleeps when the work is ahead of its share. */
  pace(): Promise<void>;
}

/**
 * `busyPercent` of wall time at most: once the steps since the last sleep took `d` ≥ CHUNK_MS,
 * the pacer sleeps `d × (100 − busyPercent) / busyPercent` ms.
 */
export function createPacer(
  busyPercent: number,
  clock: { now(): number; sleep(ms: number): Promise<unknown> } = { now: () => performance.now(), sleep },
): Pacer {
  if (!(busyPercent > 0 && busyPercent <= 100)) throw new TypeError(`busyPercent must be in (0, 100], got ${busyPercent}`);
  const idlePerBusy = (100 - busyPercent) / busyPercent;
  let busySince = clock.now();
  let busyMs = 0;
  return {
    async pace() {
      busyMs += clock.now() - busySince;
      if (busyMs >= CHUNK_MS && idlePerBusy > 0) {
        await clock.sleep(busyMs * idlePerBusy);
        // A timer that fires late buys the next chunk nothing: the sleep owed starts again at 0.
        busyMs = 0;
      }
      busySince = clock.now();
    },
  };
}
