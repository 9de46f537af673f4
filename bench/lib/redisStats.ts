// Round trips (socket writes, Tally's trackRoundTrips) and commands (ioredis sendCommand calls) on a server's own connection.
import type { RedisClient } from '../../src/redis/client.js';
import { trackRoundTrips } from '../../src/redis/roundTrips.js';

export type RedisStats = { roundTrips: number; commands: number };

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
