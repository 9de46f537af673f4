// What one HTTP request carries through everything it calls: its id (returned to the client
// and in every log line) and the Redis round trips it causes, counted by the client-side
// hook in src/redis/requestRoundTrips.ts through AsyncLocalStorage.
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';

export interface RequestScope {
  id: string;
  startedAt: number;
  /** Ticks in which this request sent Redis commands: commands of one tick share a round trip. */
  redisRoundTrips: number;
  /** Set while a tick's commands are being collected. */
  inTick: boolean;
  /** For metrics and logs: the operation ("query feed") and how it ended ("ok" or an error code). */
  operation?: string;
  outcome?: string;
}

const storage = new AsyncLocalStorage<RequestScope>();

const CLIENT_ID = /^[\w.:-]{1,128}$/;

/** The request's id: the client's `x-request-id` when well-formed, else a new one. */
export const requestIdFrom = (header: string | string[] | undefined) =>
  typeof header === 'string' && CLIENT_ID.test(header) ? header : randomUUID();

export function runInScope<T>(id: string, work: (scope: RequestScope) => Promise<T>): Promise<T> {
  const scope: RequestScope = { id, startedAt: Date.now(), redisRoundTrips: 0, inTick: false };
  return storage.run(scope, () => work(scope));
}

export const currentScope = () => storage.getStore();
