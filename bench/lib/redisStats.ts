// What a server asks of Redis, counted on its own connection (in its own process), so other
// Redis clients on the machine cannot skew it: round trips = socket writes (Tally's
// trackRoundTrips: with auto-pipelining, everything issued in one tick is one write) and
// commands = calls of ioredis' sendCommand (pipelined commands included).
import type { RedisClient } from '../../src/redis/client.js';
import { trackRoundTrips } from '../../src/redis/roundTrips.js';

export interface RedisStats {
  roundTrips: number;
  commands: number;
}

export function trackCommands(redis: RedisClient): { readonly count: number } {
  let count = 0;
  const client = redis as unknown as { sendCommand: (...args: unknown[]) => unknown };
  const send = client.sendCommand.bind(client);
  client.sendCommand = (...args: unknown[]) => {
    count += 1;
    return send(...args);
  };
  return {
    get count() {
      return count;
    },
  };
}

/** Stats of a connection the caller creates itself (Tally's app tracks round trips already). */
export function trackRedis(redis: RedisClient, roundTrips = trackRoundTrips(redis)): () => RedisStats {
  const commands = trackCommands(redis);
  return () => ({ roundTrips: roundTrips.count, commands: commands.count });
}
