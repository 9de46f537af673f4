import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createRelationKinds, DEFAULT_REACTIONS } from '../../src/domain/relations.js';
import { checkDeployment, countedLayout, DeploymentMismatchError } from '../../src/recovery/deployment.js';
import { createKeys, META } from '../../src/redis/keys.js';
import { withScripts } from '../../src/redis/luaScripts.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { deleteKeys, uniquePrefix } from '../support/redis.js';

const redis = withScripts(new Redis(TEST_REDIS_URL));
const prefix = uniquePrefix('kinds');
const keys = createKeys(prefix, 4);
afterAll(async () => {
  await deleteKeys(prefix);
  redis.disconnect();
});

const layoutOf = (contents: string[]) => countedLayout(createRelationKinds(contents.map((content) => ({ content, emoji: '·' }))));
const start = (layout: string) => checkDeployment(redis, keys, async () => false, layout);

describe('the counted kinds a deployment records', () => {
  it('records the layout, takes reactions added at the end, and refuses one moved or dropped', async () => {
    const defaults = countedLayout(createRelationKinds(DEFAULT_REACTIONS));
    expect(defaults).toBe('like:1,fav:2,r_thumbs_up:5,r_thumbs_down:6,r_laugh:7,r_hooray:8,r_confused:9,r_heart:10,r_rocket:11,r_eyes:12');
    await start(layoutOf(['A', 'B']));
    expect(await redis.hget(keys.meta(), META.kinds)).toBe('like:1,fav:2,r_a:5,r_b:6');

    await start(layoutOf(['A', 'B', 'C']));
    expect(await redis.hget(keys.meta(), META.kinds)).toBe('like:1,fav:2,r_a:5,r_b:6,r_c:7');
    await expect(start(layoutOf(['B', 'A', 'C']))).rejects.toThrow(DeploymentMismatchError);
    await expect(start(layoutOf(['A', 'B']))).rejects.toThrow(/r_c:7/);
    // Refused starts change nothing.
    expect(await redis.hget(keys.meta(), META.kinds)).toBe('like:1,fav:2,r_a:5,r_b:6,r_c:7');
  });
});
