// Who in a consumer group handles which partition. Members heartbeat into a sorted set;
// each partition belongs to the live member with the highest rendezvous score, and is only
// worked on under a lease (SET NX PX) that the owner keeps renewing. A member that dies
// stops renewing; its leases and heartbeat expire and the others take its partitions over.
// One owner per partition is what lets the aggregator keep a single applied position.
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import type { Keys } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { createStopSignal } from './stopSignal.js';

export interface AssignmentOptions {
  redis: ScriptedRedis;
  keys: Keys;
  group: string;
  memberId: string;
  leaseMs: number;
  logger: Logger;
  /** Starts work on a partition; returns a function that stops it and resolves when drained. */
  onAssigned(partition: number): () => Promise<void>;
}

// A well-mixed hash: with a weak one (FNV) members whose names differ only at the end win
// nearly every partition.
const weight = (member: string, partition: number) => createHash('sha256').update(`${member}#${partition}`).digest().readUInt32BE(0);

/** Rendezvous (highest random weight) hashing: stable, and moves only the partitions it must. */
export function ownerOf(partition: number, members: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestScore = -1;
  for (const member of members) {
    const score = weight(member, partition);
    if (score > bestScore || (score === bestScore && best !== undefined && member < best)) {
      best = member;
      bestScore = score;
    }
  }
  return best;
}

export function createPartitionAssignment(options: AssignmentOptions) {
  const { redis, keys, group, memberId, leaseMs, logger } = options;
  const scripts = createScripts(redis, keys);
  const membersKey = keys.members(group);
  const owned = new Map<number, () => Promise<void>>();
  const signal = createStopSignal();
  let loop: Promise<void> | null = null;

  const redisNow = async () => {
    const [seconds, micros] = await redis.time();
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  async function giveUp(partition: number, release: boolean) {
    const stopWork = owned.get(partition);
    owned.delete(partition);
    await stopWork?.();
    if (release) await scripts.releaseLease(keys.lease(partition, group), memberId);
  }

  async function cycle() {
    const now = await redisNow();
    await redis.zadd(membersKey, now, memberId);
    await redis.zremrangebyscore(membersKey, '-inf', now - leaseMs);
    const live = await redis.zrange(membersKey, 0, -1);
    const desired = new Set<number>();
    for (let p = 0; p < keys.partitions; p++) if (ownerOf(p, live) === memberId) desired.add(p);

    for (const partition of [...owned.keys()]) {
      if (!desired.has(partition)) {
        await giveUp(partition, true);
        logger.info({ group, partition }, 'partition handed over');
      } else if (!(await scripts.renewLease(keys.lease(partition, group), memberId, leaseMs))) {
        logger.warn({ group, partition }, 'partition lease lost');
        await giveUp(partition, false);
      }
    }
    for (const partition of desired) {
      if (owned.has(partition) || signal.stopped) continue;
      const lease = keys.lease(partition, group);
      // A lease under our own name is ours from before a restart (a stable MEMBER_ID): take it at once.
      const acquired =
        (await scripts.renewLease(lease, memberId, leaseMs)) || (await redis.set(lease, memberId, 'PX', leaseMs, 'NX')) === 'OK';
      if (acquired) owned.set(partition, options.onAssigned(partition));
    }
  }

  async function run() {
    while (!signal.stopped) {
      try {
        await cycle();
      } catch (error) {
        logger.error({ err: error, group }, 'partition assignment heartbeat failed');
      }
      await signal.sleep(Math.max(100, Math.floor(leaseMs / 3)));
    }
  }

  return {
    async start() {
      await cycle();
      loop = run();
    },

    async stop() {
      signal.stop();
      await loop;
      await Promise.all([...owned.keys()].map((p) => giveUp(p, true)));
      await redis.zrem(membersKey, memberId);
    },

    owned: () => [...owned.keys()].sort((a, b) => a - b),
  };
}
