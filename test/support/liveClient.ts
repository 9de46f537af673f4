// A graphql-ws client over a real socket to a test app, recording what it receives.
import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { waitUntil } from './wait.js';

export interface Received<T = any> {
  data?: T;
  errors?: { message: string; extensions?: Record<string, unknown> }[];
}

export interface Subscription<T = any> {
  received: Received<T>[];
  /** Settles when the server completes the subscription (or rejects with its errors). */
  done: Promise<unknown>;
  stop: () => void;
}

/**
 * The error codes of a refused subscription's `error` message (the protocol's answer to a
 * subscription that never started); anything else (a result, `complete`) fails.
 */
export async function refusalCodes(subscription: Subscription): Promise<unknown[]> {
  try {
    await subscription.done;
  } catch (errors) {
    return ((errors as Received['errors']) ?? []).map((e) => e.extensions?.code);
  }
  throw new Error(`expected an error message, got ${JSON.stringify(subscription.received)} and complete`);
}

export interface LiveClient {
  client: Client;
  /** The close event of the socket, once it closed. */
  closed: Promise<{ code: number; reason: string }>;
  /** Subscribes; `received` fills with every result, `done` settles when the server completes or fails it. */
  subscribe<T = any>(
    query: string,
    variables?: Record<string, unknown>,
  ): { received: Received<T>[]; done: Promise<unknown>; stop: () => void };
  dispose(): Promise<void>;
}

export function wsUrl(httpUrl: string): string {
  return `${httpUrl.replace(/^http/, 'ws')}/graphql`;
}

export function connectLive(httpUrl: string, options: { token?: string; connectionParams?: Record<string, unknown> } = {}): LiveClient {
  let onClosed: (event: { code: number; reason: string }) => void = () => {};
  const closed = new Promise<{ code: number; reason: string }>((resolve) => {
    onClosed = resolve;
  });
  const client = createClient({
    url: wsUrl(httpUrl),
    webSocketImpl: WebSocket,
    retryAttempts: 0,
    lazy: false,
    connectionParams: options.connectionParams ?? (options.token ? { authorization: `Bearer ${options.token}` } : {}),
    on: { closed: (event) => onClosed(event as { code: number; reason: string }) },
    onNonLazyError: () => {},
  });
  return {
    client,
    closed,
    subscribe(query, variables = {}) {
      const received: Received[] = [];
      let stop: () => void = () => {};
      const done = new Promise((resolve, reject) => {
        stop = client.subscribe(
          { query, variables },
          { next: (value) => received.push(value as Received), error: reject, complete: () => resolve(undefined) },
        );
      });
      done.catch(() => {});
      return { received, done, stop };
    },
    dispose: () => client.dispose() as Promise<void>,
  };
}

/** The server's open live subscriptions, from its metrics. */
export const openSubscriptions = async (httpUrl: string) =>
  Number(/^tally_live_subscriptions (\S+)$/m.exec(await (await fetch(`${httpUrl}/metrics`)).text())?.[1]);

/**
 * Does `act` (subscribing, stopping) and waits until the server's open subscriptions moved by
 * `delta`. The server counts a subscription as it registers its stream and sends its channels'
 * SSUBSCRIBE, so a change made after this, which reaches a flush pass only after several round
 * trips, is pushed to it.
 */
export async function onServer<T>(httpUrl: string, delta: number, act: () => T): Promise<T> {
  const before = await openSubscriptions(httpUrl);
  const result = act();
  await waitUntil(async () => (await openSubscriptions(httpUrl)) === before + delta, {
    what: `${before + delta} open subscriptions on the server`,
  });
  return result;
}
