// Structured JSON logs (one object per line) for every part of the service.
import { type Logger, pino } from 'pino';
import type { Config } from './config.js';

export type { Logger };

export const createLogger = (config: Pick<Config, 'logLevel'>): Logger => pino({ level: config.logLevel, base: { service: 'tally' } });
