// Applies the owning service's lifecycle messages (src/events/lifecycleMessage.ts) as they
// arrive on the event log, in log order, through the same entity service as the mutations (so
// a deletion is announced to every API process). A message
// Tally cannot apply is logged and counted, never retried: it would block every one behind it.
import type { EntityChange, Registration } from '../domain/entityEntries.js';
import { parseLifecycleMessage } from '../events/lifecycleMessage.js';
import type { LifecycleRecord } from '../events/lifecycleSources.js';
import type { Logger } from '../log.js';

export type LifecycleOutcome = 'applied' | 'unchanged' | 'rejected';

export interface EntityLifecycleDeps {
  applyRegistrations(registrations: readonly Registration[]): Promise<readonly unknown[]>;
  applyDeletions(deletions: readonly EntityChange[]): Promise<readonly unknown[]>;
  /** Counts messages by what they asked and what became of them (a metric). */
  counted(op: 'register' | 'delete' | 'unknown', outcome: LifecycleOutcome, n: number): void;
  logger: Logger;
}

export function createEntityLifecycle(deps: EntityLifecycleDeps) {
  /** Applies one batch of records in log order, consecutive ones of one op in one write. */
  return async function apply(records: readonly LifecycleRecord[]): Promise<void> {
    let registrations: Registration[] = [];
    let deletions: EntityChange[] = [];
    const write = async () => {
      if (registrations.length > 0) {
        const applied = (await deps.applyRegistrations(registrations)).length;
        deps.counted('register', 'applied', applied);
        deps.counted('register', 'unchanged', registrations.length - applied);
        registrations = [];
      }
      if (deletions.length > 0) {
        const applied = (await deps.applyDeletions(deletions)).length;
        deps.counted('delete', 'applied', applied);
        deps.counted('delete', 'unchanged', deletions.length - applied);
        deletions = [];
      }
    };
    for (const record of records) {
      const parsed = record.value === null ? ({ ok: false, why: 'no message field' } as const) : parseLifecycleMessage(record.value);
      if (!parsed.ok) {
        deps.logger.warn({ position: record.position, why: parsed.why }, 'skipping an entity lifecycle message Tally cannot apply');
        deps.counted('unknown', 'rejected', 1);
      } else if (parsed.change.op === 'register') {
        if (deletions.length > 0) await write();
        registrations.push(parsed.change.registration);
      } else {
        if (registrations.length > 0) await write();
        deletions.push(parsed.change.deletion);
      }
    }
    await write();
  };
}
