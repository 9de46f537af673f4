// The kafkajs client for this deployment: brokers, client id, TLS and SASL from settings,
// kafkajs' own log lines routed into ours.
import { Kafka, type LogEntry, logLevel, type SASLOptions } from 'kafkajs';
import type { KafkaConfig } from '../../config.js';
import type { Logger } from '../../log.js';

const LEVELS: Record<number, 'error' | 'warn' | 'info' | 'debug'> = {
  [logLevel.ERROR]: 'error',
  [logLevel.WARN]: 'warn',
  [logLevel.INFO]: 'info',
  [logLevel.DEBUG]: 'debug',
};

export function createKafkaClient(config: KafkaConfig, logger: Logger): Kafka {
  const kafkaLogger = logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: config.clientId,
    brokers: config.brokers,
    ssl: config.ssl,
    ...(config.sasl && { sasl: config.sasl as SASLOptions }),
    logLevel: logLevel.WARN,
    logCreator:
      () =>
      ({ level, log }: LogEntry) => {
        const { message, ...extra } = log;
        kafkaLogger[LEVELS[level] ?? 'info'](extra, message);
      },
  });
}
