// Commands about one key that ioredis cannot route on a Cluster. Cluster routing takes the key
// from ioredis' command table, which names none for container commands such as
// XINFO GROUPS <stream> or XGROUP CREATE <stream> ...: they would go to a random node and
// come back MOVED (inside an auto-pipeline, as an error the caller sees). Here the caller
// names the key, and the command goes to that key's node, following MOVED like any other.
import { Command } from 'ioredis';
import { isCluster, type RedisClient } from './client.js';

type Arg = string | number;

class KeyedCommand extends Command {
  constructor(
    name: string,
    args: Arg[],
    private readonly key: string,
  ) {
    super(name, args, { replyEncoding: 'utf8' });
  }

  /** The slot ioredis routes by is the one of this key. */
  override getKeys(): string[] {
    return [this.key];
  }
}

/** `redis.call(name, ...args)`, sent to the node that owns `key` (one of `args`). */
export function callOnKey(redis: RedisClient, key: string, name: string, ...args: Arg[]): Promise<unknown> {
  // A single server needs no routing; keep its commands on the auto-pipeline.
  if (!isCluster(redis)) return redis.call(name, ...args);
  const command = new KeyedCommand(name, args, key);
  void redis.sendCommand(command);
  return command.promise;
}
