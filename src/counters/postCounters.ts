// Posts' counters (every counted kind's, src/domain/relations.ts). A page's reads (every post's packed counters plus the flush watermark of
// every partition involved, in one MGET per command group) are issued in one tick, so
// auto-pipelining sends them as one round trip. Missing or malformed packed counters are answered
// from the facts, never as 0; after Redis lost its data, a post not restored yet is not
// answered here at all (the caller reads PostgreSQL).
import { COUNTER_SLOTS } from '../domain/counters.js';
import { type EntityRef, entityName, POST } from '../domain/entities.js';
import type { Relation } from '../domain/relations.js';
import { isCluster } from '../redis/client.js';
import type { Keys } from '../redis/keys.js';
import { commandGroups } from '../redis/partition.js';
import { createScripts, type ScriptedRedis } from '../redis/scripts.js';
import { packCounters, unpackCounters } from './packedCounters.js';

export interface PostCounts {
  /** The post's counters by slot; a slot past the end is 0 (read them with countOf). */
  slots: readonly number[];
  /** Every change acknowledged before this instant is included; null when unknown. */
  asOf: Date | null;
}

/** How many `kind` relations the counts hold. */
export const countOf = (counts: PostCounts, kind: Relation): number => (kind.slot === null ? 0 : (counts.slots[kind.slot] ?? 0));

export function createPostCounters(deps: { redis: ScriptedRedis; keys: Keys; onMissing?: (entity: EntityRef) => void }) {
  const { redis, keys } = deps;
  const scripts = createScripts(redis, keys);

  async function fromFacts(entity: EntityRef): Promise<PostCounts> {
    const { counters, at } = await scripts.countFromFacts(entity);
    // Facts are current: the count is exact as of the moment Redis read them.
    return { slots: counters, asOf: at };
  }

  /** Indexes of the posts (in partitions not ready) that recovery restored already. */
  async function restoredAmong(posts: readonly EntityRef[], partitions: number[], notReady: Set<number>): Promise<Set<number>> {
    const restored = new Set<number>();
    const waiting = posts.map((_, i) => i).filter((i) => notReady.has(partitions[i]!));
    const answers = await Promise.all(waiting.map((i) => redis.sismember(keys.restored(partitions[i]!), entityName(posts[i]!))));
    waiting.forEach((i, k) => {
      if (answers[k] === 1) restored.add(i);
    });
    return restored;
  }

  /**
   * Each entity's counters, in order; null for one whose facts Redis does not hold (it lost
   * them and they are not restored yet): its counters would be made up.
   */
  async function loadEntities(posts: readonly EntityRef[]): Promise<(PostCounts | null)[]> {
    const partitions = posts.map(keys.partitionOf);
    const raw = new Array<Buffer | null>(posts.length);
    const asOf = new Array<Date | null>(posts.length);
    const notReady = new Set<number>();
    await Promise.all(
      commandGroups(posts, (_, i) => partitions[i]!, isCluster(redis)).map(async (indexes) => {
        // The group's readiness markers and flush watermarks first, then its posts' packed counters.
        const groupPartitions = [...new Set(indexes.map((i) => partitions[i]!))];
        const values = await redis.mgetBuffer(
          ...groupPartitions.map((p) => keys.ready(p)),
          ...groupPartitions.map((p) => keys.flushed(p)),
          ...indexes.map((i) => keys.counters(posts[i]!)),
        );
        const n = groupPartitions.length;
        groupPartitions.forEach((p, k) => {
          if (values[k] === null) notReady.add(p);
        });
        const flushed = new Map(groupPartitions.map((p, k) => [p, values[n + k] ? new Date(Number(values[n + k]!.toString())) : null]));
        indexes.forEach((i, k) => {
          raw[i] = values[2 * n + k] ?? null;
          asOf[i] = flushed.get(partitions[i]!) ?? null;
        });
      }),
    );
    // Only after Redis lost its data: which posts of the partitions not ready are restored.
    const restored = notReady.size === 0 ? null : await restoredAmong(posts, partitions, notReady);

    const counts = posts.map((post, i): PostCounts | null | Promise<PostCounts> => {
      if (restored && notReady.has(partitions[i]!)) {
        // Restored counters are whole but the partition's asOf does not speak for them yet.
        if (!restored.has(i)) return null;
        asOf[i] = null;
      }
      const slots = unpackCounters(raw[i] ?? null);
      if (slots) return { slots, asOf: asOf[i] ?? null };
      deps.onMissing?.(post);
      return fromFacts(post);
    });
    return Promise.all(counts);
  }

  async function initialize(entities: readonly EntityRef[]): Promise<void> {
    const zero = packCounters(new Array(COUNTER_SLOTS).fill(0));
    await Promise.all(entities.map((entity) => redis.set(keys.counters(entity), zero, 'NX')));
  }

  return {
    /**
     * Gives a new post zeroed counters, so reading it needs no fall-back to the facts. NX:
     * never overwrites counters that exist.
     */
    initialize: (postId: number): Promise<void> => initialize([{ type: POST, id: postId }]),

    /** The same for entities of a counted type (a product's, as they are registered). */
    initializeEntities: (entities: readonly EntityRef[]): Promise<void> => initialize(entities),

    /**
     * Each post's counters, in order; null for a post whose facts Redis does not hold (it lost
     * them and they are not restored yet): its counters would be made up.
     */
    load: (postIds: readonly number[]): Promise<(PostCounts | null)[]> => loadEntities(postIds.map((id) => ({ type: POST, id }))),

    /** The same for entities of any counted type (a product's comments), in order. */
    loadEntities: (entities: readonly EntityRef[]) => loadEntities(entities),
  };
}

export type PostCounters = ReturnType<typeof createPostCounters>;
