// Counts, per request, the Redis round trips it causes: every command a request sends is
// noted in its scope, and commands sent in the same tick (which auto-pipelining writes
// together) count once. Works the same on a single Redis and on a Cluster.
import type { Cluster, Redis } from 'ioredis';
import { currentScope } from '../requestScope.js';

export function countRequestRoundTrips(client: Redis | Cluster): void {
  const send = client.sendCommand.bind(client) as (...args: unknown[]) => unknown;
  (client as { sendCommand: (...args: unknown[]) => unknown }).sendCommand = (...args: unknown[]) => {
    const scope = currentScope();
    if (scope && !scope.inTick) {
      scope.redisRoundTrips += 1;
      scope.inTick = true;
      setImmediate(() => {
        scope.inTick = false;
      });
    }
    return send(...args);
  };
}
