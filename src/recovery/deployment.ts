// Deployment facts that existing Redis data depends on, checked by every process at start.
//
// The partition count decides every key's name; starting with another value than the data
// was written with would silently split entities, so it is recorded once and checked on
// every start. The counted kinds' slots decide what each stored counter means: a kind may be
// added (a reaction at the end of REACTIONS), never moved to another slot or dropped (its
// slot would count for the next kind given it), so their layout is recorded and checked too.
// A Redis without the record is new, or lost its data: if nothing outlives it (no relation
// facts in PostgreSQL, no events in Kafka) there is nothing to recover, and every partition is
// marked ready; else no partition is, until the facts are restored (this folder). Reactions
// in a Redis that holds data but no record of their index are indexed by the workers
// (src/recovery/reactionIndex.ts).
import { type RelationKinds, slotsSpec } from '../domain/relations.js';
import { type Keys, META } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
import { markReactionsIndexed } from './reactionIndex.js';
import { createReadiness } from './readiness.js';

export class DeploymentMismatchError extends Error {
  override name = 'DeploymentMismatchError';
}

export interface DeploymentState {
  /** True when this call found no record: a new deployment, or a Redis that lost its data. */
  fresh: boolean;
  /** Partitions whose facts Redis does not hold yet (they are being recovered). */
  notReady: number[];
}

/** Every counted kind and its slot, as recorded: "like:1,fav:2,r_thumbs_up:5,…". */
export const countedLayout = (kinds: RelationKinds) => slotsSpec(kinds.all.filter((kind) => kind.slot !== null));

/** The recorded kinds this layout moved or dropped (empty when it only adds kinds). */
function changedKinds(recorded: string, layout: string): string[] {
  const now = new Set(layout.split(','));
  return recorded.split(',').filter((entry) => entry !== '' && !now.has(entry));
}

async function checkKinds(redis: ScriptedRedis, keys: Keys, layout: string) {
  const recorded = await redis.hget(keys.meta(), META.kinds);
  if (recorded === layout) return;
  const changed = recorded === null ? [] : changedKinds(recorded, layout);
  if (changed.length > 0) {
    throw new DeploymentMismatchError(
      `this Redis counts ${changed.join(', ')} (kind:slot), which this process's REACTIONS moves or drops. ` +
        'A deployment adds reactions at the end of REACTIONS and keeps the ones it had, in their order.',
    );
  }
  await redis.hset(keys.meta(), META.kinds, layout);
}

export async function checkDeployment(
  redis: ScriptedRedis,
  keys: Keys,
  /** Whether anything outlives Redis: facts in PostgreSQL, events in Kafka. */
  hasDurableState: () => Promise<boolean>,
  /** This process's counted kinds (countedLayout). */
  layout: string,
): Promise<DeploymentState> {
  const fresh = (await redis.hsetnx(keys.meta(), META.partitions, keys.partitions)) === 1;
  const recorded = Number(await redis.hget(keys.meta(), META.partitions));
  if (recorded !== keys.partitions) {
    throw new DeploymentMismatchError(
      `PARTITIONS=${keys.partitions}, but this Redis holds data written with ${recorded} partitions. ` +
        'Changing the partition count is a data migration, not a configuration change.',
    );
  }
  await checkKinds(redis, keys, layout);
  const readiness = createReadiness(redis, keys);
  if (fresh) {
    // A first start holds the whole event history from here on; a Redis that lost its data
    // does not, and must be recovered from PostgreSQL.
    if (!(await hasDurableState())) {
      await readiness.markAllReady();
      await markReactionsIndexed(redis, keys);
      await redis.hsetnx(keys.meta(), META.history, 'complete');
    }
    await redis.hset(keys.meta(), META.readiness, 'markers');
  } else if ((await redis.hsetnx(keys.meta(), META.readiness, 'markers')) === 1) {
    // Data written before readiness markers existed is whole, unless that version was in the
    // middle of a recovery: then the recovery finishes the job.
    if ((await redis.exists(keys.legacyRecovering())) === 0) await readiness.markAllReady();
  }
  return { fresh, notReady: await readiness.notReady() };
}
