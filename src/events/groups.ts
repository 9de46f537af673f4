// The consumer groups that read the event log, named here (not by their consumers) because
// the log reports each group's lag and waits on the persister's progress.

/** The aggregator: sums events into the partitions' aggregation hashes (src/consumers/aggregator.ts). */
export const AGGREGATOR_GROUP = 'counter-agg';
/** The fact persister: writes relation facts to PostgreSQL (src/consumers/factPersister.ts). */
export const PERSISTER_GROUP = 'counter-facts';
/** The relay: copies the outbox into the Kafka topic (src/consumers/relay.ts). */
export const RELAY_GROUP = 'counter-relay';
