// Deployment facts that existing Redis data depends on, checked by every process at start.
//
// The partition count decides every key's name; starting with another value than the data
// was written with would silently split entities, so it is recorded once and checked on
// every start. A Redis without the record is new, or lost its data: if nothing outlives it
// (no relation facts in PostgreSQL, no events in Kafka) there is nothing to recover, and
// every partition is marked ready; else no partition is, until the facts are restored
// (this folder).
import { type Keys, META } from '../redis/keys.js';
import type { ScriptedRedis } from '../redis/scripts.js';
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

export async function checkDeployment(
  redis: ScriptedRedis,
  keys: Keys,
  /** Whether anything outlives Redis: facts in PostgreSQL, events in Kafka. */
  hasDurableState: () => Promise<boolean>,
): Promise<DeploymentState> {
  const fresh = (await redis.hsetnx(keys.meta(), META.partitions, keys.partitions)) === 1;
  const recorded = Number(await redis.hget(keys.meta(), META.partitions));
  if (recorded !== keys.partitions) {
    throw new DeploymentMismatchError(
      `PARTITIONS=${keys.partitions}, but this Redis holds data written with ${recorded} partitions. ` +
        'Changing the partition count is a data migration, not a configuration change.',
    );
  }
  const readiness = createReadiness(redis, keys);
  if (fresh) {
    // A first start holds the whole event history from here on; a Redis that lost its data
    // does not, and must be recovered from PostgreSQL.
    if (!(await hasDurableState())) {
      await readiness.markAllReady();
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
