// The Kafka broker for tests: KAFKA_BROKERS when set (a real cluster), otherwise librdkafka's
// mock cluster from Debian's kcat, a Kafka-protocol broker on loopback (closing its stdin
// stops it). Tests name the broker they ran against.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface TestKafka {
  brokers: string[];
  /** Which broker the run used, for test names and output. */
  label: string;
  stop(): Promise<void>;
}

export async function startKafka(): Promise<TestKafka> {
  const external = process.env.KAFKA_BROKERS;
  if (external) {
    return { brokers: external.split(','), label: `Kafka at ${external}`, stop: async () => {} };
  }
  const kcat = spawn('kcat', ['-b', 'unused:1', '-X', 'test.mock.num.brokers=3', '-P', '-t', '__keepalive'], {
    stdio: ['pipe', 'ignore', 'pipe'],
  });
  const brokers = await new Promise<string>((resolve, reject) => {
    let text = '';
    const timer = setTimeout(() => reject(new Error(`kcat mock cluster did not start: ${text}`)), 10_000);
    kcat.once('error', (error) => reject(new Error(`kcat is not installed (apt-get install kcat): ${error.message}`)));
    kcat.stderr.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const match = /replaced with (\S+)/.exec(text);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  return {
    brokers: brokers.split(','),
    label: 'librdkafka mock cluster (kcat, 3 brokers)',
    stop: () =>
      new Promise<void>((resolve) => {
        if (kcat.exitCode !== null) return resolve();
        kcat.once('exit', () => resolve());
        kcat.stdin.end();
      }),
  };
}

/** Settings for a Tally process on this broker, with a topic and groups of its own. */
export function kafkaEnv(kafka: TestKafka): Record<string, string> {
  const id = randomBytes(3).toString('hex');
  return {
    EVENT_LOG: 'kafka',
    KAFKA_BROKERS: kafka.brokers.join(','),
    KAFKA_TOPIC: `counter-events-${id}`,
    KAFKA_ENTITY_TOPIC: `entity-lifecycle-${id}`,
    KAFKA_GROUP_PREFIX: `${id}-`,
    // librdkafka's mock cluster has no controller for InitProducerId; a real cluster does.
    KAFKA_IDEMPOTENT: process.env.KAFKA_BROKERS ? 'true' : 'false',
    KAFKA_SESSION_TIMEOUT_MS: '6000',
  };
}
