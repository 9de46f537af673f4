// Deployment facts that existing Redis data depends on, and the check that notices when
// Redis has lost its data.
//
// The partition count decides every key's name; starting with another value than the data
// was written with would silently split entities, so it is recorded once and checked on
// every start. The same record tells a fresh (or flushed) Redis apart: if it is missing while
// PostgreSQL holds relation facts, Redis lost its data, and Tally enters recovery mode (reads
// answer from PostgreSQL) until `npm run recover` has rebuilt the facts and counters.
import type { Redis, Cluster } from 'ioredis';
import { createRecoveryFlag } from '../recovery/recoveryFlag.js';
import type { Keys } from './keys.js';

/** Field of the deployment record: 'complete' while the event log holds every event ever written. */
export const HISTORY_FIELD = 'history';

export class DeploymentMismatchError extends Error {
  override name = 'DeploymentMismatchError';
}

export interface DeploymentState {
  /** True when this call found no record: a new deployment, or a Redis that lost its data. */
  fresh: boolean;
  /** True when reads must not trust Redis counters (recovery not finished). */
  recovering: boolean;
}

export async function checkDeployment(
  redis: Redis | Cluster,
  keys: Keys,
  hasDurableFacts: () => Promise<boolean>,
): Promise<DeploymentState> {
  const fresh = (await redis.hsetnx(keys.meta(), 'partitions', keys.partitions)) === 1;
  const recorded = Number(await redis.hget(keys.meta(), 'partitions'));
  if (recorded !== keys.partitions) {
    throw new DeploymentMismatchError(
      `PARTITIONS=${keys.partitions}, but this Redis holds data written with ${recorded} partitions. ` +
        'Changing the partition count is a data migration, not a configuration change.',
    );
  }
  const flag = createRecoveryFlag(redis, keys);
  if (fresh) {
    // A first start holds the whole event history from here on; a Redis that lost its data
    // does not (and must be recovered from PostgreSQL).
    if (await hasDurableFacts()) await flag.set();
    else await redis.hsetnx(keys.meta(), HISTORY_FIELD, 'complete');
  }
  return { fresh, recovering: await flag.isOn() };
}
