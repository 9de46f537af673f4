// The event log port. Adapters (Redis Streams, Kafka) deliver ordered batches per
// partition, at least once; a batch is acknowledged only after its handler resolved, so
// handlers must be idempotent (the aggregator records applied positions for that).
import type { EntityType } from '../domain/entities.js';

/** A change of one fact, emitted only when the fact really changed. */
export interface CounterEvent {
  /** Outbox stream id ("<ms>-<seq>"): unique, ordered within its partition, the event's version. */
  id: string;
  partition: number;
  entityType: EntityType;
  entityId: number;
  /** The relation's name (src/domain/relations.ts). */
  relation: string;
  /** The entity's counter slot this event moves (its kind's, src/domain/relations.ts); null for a kind no packed counter counts. */
  slot: number | null;
  userId: number;
  authorId: number;
  delta: 1 | -1;
  /** Epoch ms at which the fact changed (the outbox id's time). */
  ts: number;
}

export interface LogEntry {
  /** Where this entry sits in its partition: the outbox stream id (on Kafka too, from the message header). */
  position: string;
  event: CounterEvent;
}

export interface EventBatch {
  /** Tally partition N: every event of the batch belongs to it. */
  partition: number;
  /** Which log the positions belong to (positions from different sources do not compare). */
  source: string;
  /** In log order. */
  entries: LogEntry[];
}

export type BatchHandler = (batch: EventBatch) => Promise<void>;

export interface Subscription {
  start(): Promise<void>;
  /** Partitions this member handles right now. */
  assignedPartitions(): number[];
  /** Finishes and acknowledges the batches in hand, then leaves the group. */
  stop(): Promise<void>;
}

/** How far one consumer group is behind on one partition. */
export interface GroupLag {
  group: string;
  partition: number;
  /** Delivered to a member, not acknowledged yet. */
  pending: number;
  /** Not delivered to the group yet (null when the log cannot tell). */
  undelivered: number | null;
}

export interface EventLog {
  /** Joins consumer `group`; every partition is handled by one member of the group at a time. */
  subscribe(group: string, handler: BatchHandler): Subscription;
  /** Lag of every consumer group on every partition. */
  lag(): Promise<GroupLag[]>;
  /**
   * A check that turns true once `group` has handled every event the log holds at the time of
   * this call (absent where the log cannot outlive Redis: the Redis Streams outbox).
   */
  consumedUpToNow?(group: string): Promise<() => Promise<boolean>>;
  /** Whether any event was ever written to the log (absent where the log cannot outlive Redis). */
  everWritten?(): Promise<boolean>;
  /** Whether the log still holds every event since the deployment began (nothing trimmed). */
  historyComplete(): Promise<boolean>;
  /**
   * Reads every retained event from the earliest up to the end as of the call, in log order
   * within each partition (partitions may interleave).
   */
  readHistory(onEntries: (partition: number, entries: LogEntry[]) => Promise<void>): Promise<void>;
  /** Releases connections the log opened for itself (not its subscriptions': stop those). */
  close(): Promise<void>;
}

/** Compares two log positions ("<hi>-<lo>"). */
export function comparePositions(a: string, b: string): number {
  const [ah = 0, al = 0] = a.split('-').map(Number);
  const [bh = 0, bl = 0] = b.split('-').map(Number);
  return ah !== bh ? Math.sign(ah - bh) : Math.sign(al - bl);
}
