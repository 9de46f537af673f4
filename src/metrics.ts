// Prometheus metrics (`GET /metrics`). Gauges that need Redis are computed at scrape time;
// counters are incremented where the work happens.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { GroupLag } from './events/types.js';

export interface MetricSources {
  /** Event log lag per group and partition. */
  lag(): Promise<GroupLag[]>;
}

export function createMetrics(sources: MetricSources) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'tally_' });

  new Gauge({
    name: 'tally_event_log_lag',
    help: 'Events a consumer group has not finished: pending = delivered but not acknowledged, undelivered = not read yet',
    labelNames: ['group', 'partition', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const lag of await sources.lag()) {
        const labels = { group: lag.group, partition: String(lag.partition) };
        this.set({ ...labels, state: 'pending' }, lag.pending);
        if (lag.undelivered !== null) this.set({ ...labels, state: 'undelivered' }, lag.undelivered);
      }
    },
  });

  return {
    registry,
    rebuilds: new Counter({
      name: 'tally_rebuilds_total',
      help: 'Counter rebuilds from facts, by what ran them and how they ended',
      labelNames: ['via', 'outcome'] as const,
      registers: [registry],
    }),
    reconciledEntities: new Counter({
      name: 'tally_reconcile_checked_total',
      help: 'Entities reconciliation compared across counters, bitmaps and PostgreSQL',
      registers: [registry],
    }),
    drift: new Counter({
      name: 'tally_reconcile_drift_total',
      help: 'Entities reconciliation found out of step: counters (SDS vs bitmaps) or facts (bitmaps vs PostgreSQL)',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
