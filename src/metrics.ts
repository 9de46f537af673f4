// Prometheus metrics (`GET /metrics`). Gauges that need Redis are computed at scrape time;
// counters are incremented where the work happens.
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import type { GroupLag } from './events/types.js';

export interface MetricSources {
  /** Event log lag per group and partition. */
  lag(): Promise<GroupLag[]>;
  /** Redis round trips this process started so far (src/redis/roundTrips.ts). */
  redisRoundTrips(): number;
  /** Per partition: views recorded and not yet added up, and entities whose views are not yet in PostgreSQL. */
  viewBacklog?(): Promise<{ partition: number; buffered: number; unpersisted: number }[]>;
  /** Estimated heap of the parsed and compiled document caches (src/graphql/documentCache.ts); API processes only. */
  documentCacheBytes?(): { parsed: number; compiled: number };
  /** Whether this API process hears deletions and erasures (src/services/announcements.ts); API processes only. */
  announcementsListening?(): boolean;
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

  new Gauge({
    name: 'tally_views_backlog',
    help: 'Views work not done yet: buffered = views recorded and not yet added up by the flush, unpersisted = entities whose views are not yet in PostgreSQL',
    labelNames: ['partition', 'state'] as const,
    registers: [registry],
    async collect() {
      this.reset();
      for (const { partition, buffered, unpersisted } of (await sources.viewBacklog?.()) ?? []) {
        this.set({ partition: String(partition), state: 'buffered' }, buffered);
        this.set({ partition: String(partition), state: 'unpersisted' }, unpersisted);
      }
    },
  });

  new Counter({
    name: 'tally_redis_round_trips_total',
    help: 'Redis round trips this process started (ticks with writes; commands of one tick share one). Per request: divide by tally_graphql_requests_total',
    registers: [registry],
    collect() {
      this.reset();
      this.inc(sources.redisRoundTrips());
    },
  });

  const { documentCacheBytes } = sources;
  if (documentCacheBytes)
    new Gauge({
      name: 'tally_graphql_document_cache_bytes',
      help: 'Estimated heap held by cached documents: parsed (Apollo) and compiled (graphql-jit); bounded by DOCUMENT_CACHE_BYTES and COMPILED_CACHE_BYTES',
      labelNames: ['cache'] as const,
      registers: [registry],
      collect() {
        const bytes = documentCacheBytes();
        this.set({ cache: 'parsed' }, bytes.parsed);
        this.set({ cache: 'compiled' }, bytes.compiled);
      },
    });

  const { announcementsListening } = sources;
  if (announcementsListening)
    new Gauge({
      name: 'tally_announcements_listening',
      help: '1 while this API process hears deletions and erasures; 0 while it does not (it is not ready, and forgets its caches every heartbeat)',
      registers: [registry],
      collect() {
        this.set(announcementsListening() ? 1 : 0);
      },
    });

  const requests = new Counter({
    name: 'tally_graphql_requests_total',
    help: 'GraphQL requests by operation name and outcome (ok, or the first error code)',
    labelNames: ['operation', 'outcome'] as const,
    registers: [registry],
  });
  const requestDuration = new Histogram({
    name: 'tally_graphql_request_duration_seconds',
    help: 'GraphQL request latency, from the first byte read to the response',
    labelNames: ['operation'] as const,
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  /** One finished GraphQL request (labels: operations from the schema, outcomes from the closed codes). */
  function recordRequest(operation: string, outcome: string, seconds: number): void {
    requests.inc({ operation, outcome });
    requestDuration.observe({ operation }, seconds);
  }

  return {
    registry,
    recordRequest,
    flushDuration: new Histogram({
      name: 'tally_flush_duration_seconds',
      help: 'Duration of one flush job (folding a group of partitions)',
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 5],
      registers: [registry],
    }),
    flushBatch: new Histogram({
      name: 'tally_flush_entities',
      help: 'Entities one flush job folded',
      buckets: [0, 1, 10, 100, 1000, 10_000, 100_000],
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: 'tally_rate_limited_total',
      help: 'Requests (or parts of one) refused by a per-client budget, by budget',
      labelNames: ['budget'] as const,
      registers: [registry],
    }),
    rebuilds: new Counter({
      name: 'tally_rebuilds_total',
      help: 'Counter rebuilds from facts, by what ran them and how they ended',
      labelNames: ['via', 'outcome'] as const,
      registers: [registry],
    }),
    reconciledEntities: new Counter({
      name: 'tally_reconcile_checked_total',
      help: 'Entities reconciliation compared across counters, relation sets and PostgreSQL',
      registers: [registry],
    }),
    drift: new Counter({
      name: 'tally_reconcile_drift_total',
      help: 'Entities reconciliation found out of step: counters (packed vs relation sets) or facts (relation sets vs PostgreSQL)',
      labelNames: ['kind'] as const,
      registers: [registry],
    }),
    lifecycleMessages: new Counter({
      name: 'tally_entity_lifecycle_messages_total',
      help: 'Entity lifecycle messages read from the event log, by op (register, delete; unknown when unreadable) and outcome (applied, unchanged, rejected)',
      labelNames: ['op', 'outcome'] as const,
      registers: [registry],
    }),
    liveSockets: new Gauge({
      name: 'tally_live_sockets',
      help: 'WebSocket connections open on this process (live counts)',
      registers: [registry],
    }),
    liveSubscriptions: new Gauge({
      name: 'tally_live_subscriptions',
      help: 'Live count subscriptions open on this process',
      registers: [registry],
    }),
    livePushes: new Counter({
      name: 'tally_live_pushes_total',
      help: 'Pushes handed to subscriptions (one per watched entity that changed, per subscription)',
      registers: [registry],
    }),
    livePushesDropped: new Counter({
      name: 'tally_live_pushes_dropped_total',
      help: 'Pushes replaced by a newer one for the same entity before a slow socket took them',
      registers: [registry],
    }),
    liveFanOutLag: new Histogram({
      name: 'tally_live_fan_out_lag_seconds',
      help: 'From the flush pass publishing a change to its push being handed to the socket',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    liveClosed: new Counter({
      name: 'tally_live_sockets_closed_total',
      help: 'WebSocket connections closed, by close code',
      labelNames: ['code'] as const,
      registers: [registry],
    }),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
