// Counter events as Kafka messages. Key = the entity (so one entity's events stay together),
// the outbox event id and the Tally partition in headers, the event itself as JSON.

import type { ICustomPartitioner, KafkaMessage, Message } from 'kafkajs';
import type { EntityType } from '../../domain/entities.js';
import { TYPES } from '../../domain/kinds.js';
import type { CounterEvent } from '../types.js';

export const EVENT_ID_HEADER = 'event-id';
export const PARTITION_HEADER = 'tally-partition';

export function toMessage(event: CounterEvent): Message {
  return {
    key: `${event.entityType}:${event.entityId}`,
    value: JSON.stringify({
      e: event.entityType,
      i: event.entityId,
      m: event.relation,
      x: event.slot,
      u: event.userId,
      a: event.authorId,
      d: event.delta,
    }),
    headers: { [EVENT_ID_HEADER]: event.id, [PARTITION_HEADER]: String(event.partition) },
  };
}

const header = (message: KafkaMessage | Message, name: string) => message.headers?.[name]?.toString();

/** The Tally partition a message belongs to (also used by the producer's partitioner). */
export const tallyPartitionOf = (message: KafkaMessage | Message) => Number(header(message, PARTITION_HEADER));

/** Decodes a message Tally produced; null for anything else on the topic. */
export function fromMessage(message: KafkaMessage): CounterEvent | null {
  const id = header(message, EVENT_ID_HEADER);
  const partition = tallyPartitionOf(message);
  if (!id || !/^\d+-\d+$/.test(id) || !Number.isInteger(partition) || !message.value) return null;
  try {
    const v = JSON.parse(message.value.toString()) as Record<string, unknown>;
    const valid =
      typeof v.e === 'string' &&
      TYPES.has(v.e) &&
      typeof v.m === 'string' &&
      [v.i, v.u, v.a].every(Number.isSafeInteger) &&
      (v.x === null || Number.isSafeInteger(v.x)) &&
      (v.d === 1 || v.d === -1);
    if (!valid) return null;
    return {
      id,
      partition,
      entityType: v.e as EntityType,
      entityId: v.i as number,
      relation: v.m as string,
      slot: v.x as number | null,
      userId: v.u as number,
      authorId: v.a as number,
      delta: v.d as 1 | -1,
      ts: Number(id.split('-')[0]),
    };
  } catch {
    return null;
  }
}

/**
 * Every event of Tally partition N goes to Kafka partition N mod (topic partitions), so one
 * partition's events stay in order on one Kafka partition, like in the outbox.
 */
export const tallyPartitioner: ICustomPartitioner =
  () =>
  ({ partitionMetadata, message }) =>
    tallyPartitionOf(message) % partitionMetadata.length;
