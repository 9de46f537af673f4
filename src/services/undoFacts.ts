// Setting facts inactive through the relation store, the path a mutation takes, for the jobs
// that remove facts (an account's erasure, a deleted entity's purge): each change emits its
// event, so every count moves by exactly the right amount, once, and a fact already inactive
// changes nothing (a batch run twice decrements nothing twice).
import type { RelationStore, SetFactInput } from '../relations/relationStore.js';

/** Awaited between the chunks of a batch; a job's pacer sleeps in it. */
export type Pace = () => Promise<void>;

/** Facts undone in one go: a round trip's worth, a couple of milliseconds of work. */
const UNDO_CHUNK = 10;

/**
 * A request already past its process's check when the process learns that the user or entity
 * is gone: work that must come after every such change waits this long after every process
 * refuses it.
 */
export const IN_FLIGHT_MS = 1000;

/**
 * Sets `facts` inactive, UNDO_CHUNK at a time: a chunk's scripts go out together (one round
 * trip, their events read by the consumers together), then `pace` may sleep. Returns how many changed.
 */
export async function undoFacts(relations: RelationStore, facts: readonly SetFactInput[], pace: Pace): Promise<number> {
  let changed = 0;
  for (let i = 0; i < facts.length; i += UNDO_CHUNK) {
    const results = await Promise.all(facts.slice(i, i + UNDO_CHUNK).map((fact) => relations.setFact(fact)));
    changed += results.filter((r) => r.changed).length;
    await pace();
  }
  return changed;
}
