// What a server asks of Redis, counted on its own connection (in its own process), so other
// Redis clients on the machine cannot skew it: round trips = socket writes (Tally's
// trackRoundTrips: with auto-pipelining, everything issued in one tick is one write) and
// commands = calls of ioredis' sendCommand (pipelined commands included).
import type { RedisClient } from '../../src/redis/client.js';
import { trackRoundTrips } from '../../src/redis/roundTrips.js';

export type RedisStats = { roundTrips: number; commands: number };

/** Counts from now on; Tally's app passes the round-trip tracker it has already. */
export function trackRedis(redis: RedisClient, roundTrips = trackRoundTrips(redis)): () => RedisStats {
  let commands = 0;
  const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (...args: unknown[]) => {
    commands += 1;
    return send(...args);
  };
  return () => ({ roundTrips: roundTrips.count, commands });
}
