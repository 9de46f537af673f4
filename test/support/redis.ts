// Redis isolation for tests and benchmarks: each gets its own key prefix and removes its keys.
// Works on a single Redis (a URL) and on a Redis Cluster (a target with cluster nodes).
import { randomBytes } from 'node:crypto';
import { Cluster, Redis } from 'ioredis';
import { type RedisTarget, seedNodes } from '../../src/redis/client.js';
import { TEST_REDIS_URL } from './env.js';

export const uniquePrefix = (label = 't') => `${label}${randomBytes(4).toString('hex')}:`;

/** SCAN walks one server's keyspace, so a Cluster is walked master by master. */
async function withServers(target: string | RedisTarget, work: (servers: Redis[]) => Promise<void>) {
  const { redisUrl, redisClusterNodes = [] } = typeof target === 'string' ? { redisUrl: target } : target;
  const client = redisClusterNodes.length > 0 ? new Cluster(seedNodes(redisClusterNodes)) : new Redis(redisUrl);
  try {
    await client.ping(); // a Cluster knows its masters once it answers
    await work(client instanceof Cluster ? client.nodes('master') : [client]);
  } finally {
    client.disconnect();
  }
}

/** Calls `each` with every batch of keys under `prefix` on one server (SCAN is fine here: not production). */
async function scanServer(redis: Redis, prefix: string, each: (keys: string[]) => Promise<unknown>) {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    if (keys.length > 0) await each(keys);
    cursor = next;
  } while (cursor !== '0');
}

/** Removes every key under `prefix`: one UNLINK per key, as a Cluster refuses keys of several slots in one. */
export const deleteKeys = (prefix: string, target: string | RedisTarget = TEST_REDIS_URL) =>
  withServers(target, async (servers) => {
    for (const redis of servers) {
      await scanServer(redis, prefix, async (keys) => {
        const unlinks = redis.pipeline();
        for (const key of keys) unlinks.unlink(key);
        await unlinks.exec();
      });
    }
  });

/**
 * Every key under `prefix` gone in one step, as when Redis loses its data: a deployment running
 * on it never sees half of them gone (deleteKeys unlinks batch by batch). One server only.
 */
export async function loseKeys(prefix: string, url = TEST_REDIS_URL): Promise<number> {
  const redis = new Redis(url);
  try {
    const script = `local keys = redis.call('KEYS', ARGV[1])
      for i = 1, #keys, 1000 do redis.call('UNLINK', unpack(keys, i, math.min(i + 999, #keys))) end
      return #keys`;
    return (await redis.eval(script, 0, `${prefix}*`)) as number;
  } finally {
    redis.disconnect();
  }
}

/** How many keys under `prefix` each server holds (one entry per Cluster master). */
export async function keysPerServer(prefix: string, target: string | RedisTarget = TEST_REDIS_URL): Promise<number[]> {
  const counts: number[] = [];
  await withServers(target, async (servers) => {
    for (const redis of servers) {
      let count = 0;
      await scanServer(redis, prefix, async (keys) => (count += keys.length));
      counts.push(count);
    }
  });
  return counts;
}

export const countKeys = async (prefix: string, target: string | RedisTarget = TEST_REDIS_URL) =>
  (await keysPerServer(prefix, target)).reduce((a, b) => a + b, 0);
