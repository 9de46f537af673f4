// The relay: moves outbox entries (consumer group `counter-relay` on the Redis streams) into
// the Kafka topic. Entries are acknowledged, and so may be trimmed, only after the brokers
// acknowledged the send (acks = all). A relay that dies in between re-sends them: Kafka may
// then hold an event twice, and consumers drop the copy by its event id.
import type { Kafka, Producer } from 'kafkajs';
import type { EventLogs } from '../events/eventLog.js';
import { RELAY_GROUP } from '../events/groups.js';
import { tallyPartitioner, toMessage } from '../events/kafka/messages.js';
import type { EventLog, Subscription } from '../events/types.js';
import type { Logger } from '../log.js';

export function createRelay(deps: { kafka: Kafka; outbox: EventLog; topic: string; idempotent: boolean; logger: Logger }) {
  const producer: Producer = deps.kafka.producer({
    idempotent: deps.idempotent,
    // One request in flight: a retried send can never overtake the next one.
    maxInFlightRequests: 1,
    createPartitioner: tallyPartitioner,
  });
  const subscription: Subscription = deps.outbox.subscribe(RELAY_GROUP, async (batch) => {
    await producer.send({ topic: deps.topic, acks: -1, messages: batch.entries.map((e) => toMessage(e.event)) });
    deps.logger.debug({ partition: batch.partition, events: batch.entries.length }, 'relayed events to Kafka');
  });

  return {
    async start() {
      await producer.connect();
      await subscription.start();
    },
    /** Finishes the send in hand and acknowledges it, then disconnects. */
    async stop() {
      await subscription.stop();
      await producer.disconnect();
    },
    assignedPartitions: () => subscription.assignedPartitions(),
  };
}

/** The relay a deployment needs: one into its Kafka topic, or none when consumers read the outbox. */
export function relayFor(eventLogs: EventLogs, logger: Logger): Relay | null {
  const target = eventLogs.relayTarget;
  return target && createRelay({ ...target, outbox: eventLogs.outbox, logger });
}

export type Relay = ReturnType<typeof createRelay>;
