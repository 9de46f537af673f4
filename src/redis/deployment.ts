// Deployment facts that existing Redis data depends on. The partition count decides every
// key's name; starting with another value than the data was written with would silently
// split entities, so it is recorded once and checked on every start.
import type { Redis, Cluster } from 'ioredis';
import type { Keys } from './keys.js';

export class DeploymentMismatchError extends Error {
  override name = 'DeploymentMismatchError';
}

export async function checkPartitionCount(redis: Redis | Cluster, keys: Keys): Promise<void> {
  await redis.hsetnx(keys.meta(), 'partitions', keys.partitions);
  const recorded = Number(await redis.hget(keys.meta(), 'partitions'));
  if (recorded !== keys.partitions) {
    throw new DeploymentMismatchError(
      `PARTITIONS=${keys.partitions}, but this Redis holds data written with ${recorded} partitions. ` +
        'Changing the partition count is a data migration, not a configuration change.',
    );
  }
}
