// Counts the Redis round trips a client starts: the event-loop ticks in which it wrote
// anything to any server. With auto-pipelining every command issued in one tick goes out in
// one write per server; on a Cluster that is one write to each node involved, sent in
// parallel, so still one round trip in latency terms. Tests assert on it; benchmarks report it.
import type { Cluster, Redis } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';

type Writable = { write: (...args: unknown[]) => boolean; tallyCounted?: boolean };

export function trackRoundTrips(client: RedisClient): { readonly count: number } {
  let count = 0;
  let wroteThisTick = false;
  const onWrite = () => {
    if (wroteThisTick) return;
    count += 1;
    wroteThisTick = true;
    // Auto-pipelines flush in setImmediate callbacks; one scheduled now runs after them.
    setImmediate(() => {
      wroteThisTick = false;
    });
  };

  /** Hooks a connection's socket, and each new socket it opens on reconnect. */
  const track = (connection: Redis) => {
    const instrument = () => {
      const stream = (connection as unknown as { stream?: Writable }).stream;
      if (!stream || stream.tallyCounted) return;
      const write = stream.write.bind(stream);
      stream.write = (...args: unknown[]) => {
        onWrite();
        return write(...args);
      };
      stream.tallyCounted = true;
    };
    connection.on('connect', instrument);
    instrument();
  };

  if (isCluster(client)) {
    // Node connections appear as the Cluster discovers its topology (and after failovers).
    const cluster: Cluster = client;
    cluster.on('+node', track);
    cluster.nodes('all').forEach(track);
  } else {
    track(client);
  }
  return {
    get count() {
      return count;
    },
  };
}
