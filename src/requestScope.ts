// What one HTTP request carries through everything it calls: its id (returned to the client
// and in its log line) and, for metrics and logs, what it ran and how it ended. Passed
// explicitly (the GraphQL context holds it), not through AsyncLocalStorage: on Node 20 its
// promise hooks cost about a fifth of a feed request's CPU (docs/performance.md).
import { randomUUID } from 'node:crypto';

export interface RequestScope {
  id: string;
  startedAt: number;
  /** The client's address as rate limits count it (src/limits/clientAddress.ts). */
  client: string;
  /** The operation ("query feed") and how it ended ("ok" or an error code). */
  operation?: string;
  outcome?: string;
}

const CLIENT_ID = /^[\w.:-]{1,128}$/;

/** The request's id: the client's `x-request-id` when well-formed, else a new one. */
export const requestIdFrom = (header: string | string[] | undefined) =>
  typeof header === 'string' && CLIENT_ID.test(header) ? header : randomUUID();

export const createRequestScope = (id: string, client: string): RequestScope => ({ id, startedAt: Date.now(), client });
