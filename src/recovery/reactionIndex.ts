// Builds the reaction index (lua/includes/reactionIndex.lua) of reactions written before it
// existed: a deployment upgraded from a version without it. Nothing waits for this: until a
// partition is marked indexed, reads look its reactions up kind by kind and a write builds its
// entity's index from the sets first; it only makes reads cheap. Every worker's recovery watch
// asks for it; the process holding the lock SCANs each Redis node for reaction sets and indexes
// their entities. If that process dies, the lock lapses and the next look starts over (an
// entity indexed stays indexed). A process of the version before keeps no index: the build
// must start once none of them writes any more (docs/operations.md, "Durability operations").
import { randomUUID } from 'node:crypto';
import { type EntityRef, entityName } from '../domain/entities.js';
import { KINDS } from '../domain/kinds.js';
import type { Logger } from '../log.js';
import { isCluster } from '../redis/client.js';
import { type Keys, META } from '../redis/keys.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';

const LOCK_MS = 30_000;
const SCAN_COUNT = 1000;
const WHOLE = 'whole';

/** Marks every partition indexed: no reaction written before the index is left unindexed (or there never was one). */
export async function markReactionsIndexed(redis: ScriptedRedis, keys: Keys) {
  await Promise.all(Array.from({ length: keys.partitions }, (_, p) => redis.set(keys.reactionsIndexed(p), '1')));
  await redis.hset(keys.meta(), META.reactionIndex, WHOLE);
}

export function createReactionIndexBuilder(redis: ScriptedRedis, keys: Keys, logger: Logger) {
  const scripts = createScripts(redis, keys);
  const reactions = new Set(KINDS.reactions.map((kind) => kind.name));
  const sets = keys.relationSets();

  /** Indexes the entities of every reaction set on one node, a SCAN page at a time. */
  async function indexNode(node: ScriptedRedis, renew: () => Promise<void>, shouldStop: () => boolean): Promise<number> {
    let built = 0;
    for (const match of sets.matches) {
      let cursor = '0';
      do {
        const [next, found] = await node.scan(cursor, 'MATCH', match, 'COUNT', SCAN_COUNT);
        const entities = new Map<string, EntityRef>();
        for (const key of found) {
          const set = sets.parse(key);
          if (set && reactions.has(set.relation)) entities.set(entityName(set.entity), set.entity);
        }
        const outcomes = await Promise.all([...entities.values()].map((entity) => scripts.indexReactions(entity)));
        built += outcomes.filter(Boolean).length;
        cursor = next;
        await renew();
        if (shouldStop()) return -1;
      } while (cursor !== '0');
    }
    return built;
  }

  return {
    /** Whether every reaction in Redis is indexed. */
    isWhole: async () => (await redis.hget(keys.meta(), META.reactionIndex)) === WHOLE,

    /** Builds the index unless another process is at it: 'built', 'busy' or 'stopped'. */
    async build(shouldStop: () => boolean = () => false): Promise<'built' | 'busy' | 'stopped'> {
      const lock = keys.reactionIndexLock();
      const token = randomUUID();
      if ((await redis.set(lock, token, 'PX', LOCK_MS, 'NX')) !== 'OK') return 'busy';
      const renew = async () => {
        if (!(await scripts.renewLease(lock, token, LOCK_MS))) throw new Error('lost the reaction index lock');
      };
      try {
        const started = Date.now();
        let built = 0;
        const nodes = (isCluster(redis) ? redis.nodes('master') : [redis]) as ScriptedRedis[];
        for (const node of nodes) {
          const onNode = await indexNode(node, renew, shouldStop);
          if (onNode < 0) return 'stopped';
          built += onNode;
        }
        await markReactionsIndexed(redis, keys);
        logger.info({ entities: built, ms: Date.now() - started }, 'reaction index built');
        return 'built';
      } finally {
        await scripts.releaseLease(lock, token);
      }
    },
  };
}

export type ReactionIndexBuilder = ReturnType<typeof createReactionIndexBuilder>;
