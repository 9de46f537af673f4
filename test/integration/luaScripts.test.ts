import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { createKeys } from '../../src/redis/keys.js';
import { loadScripts, withScripts } from '../../src/redis/luaScripts.js';
import { ScriptError, ScriptErrorCode } from '../../src/redis/scriptErrors.js';
import { createScripts } from '../../src/redis/scripts.js';
import { TEST_REDIS_URL } from '../support/env.js';
import { uniquePrefix } from '../support/redis.js';

const redis = new Redis(TEST_REDIS_URL);
afterAll(() => redis.disconnect());

describe('lua scripts', () => {
  const scripts = loadScripts();

  it('are found, named <verbNoun>-<keys>.lua, with includes inlined', () => {
    expect(scripts.map((s) => s.name).sort()).toEqual(
      [
        'acquireRebuild',
        'addViews',
        'applyCounterBatch',
        'claimViews',
        'countFromFacts',
        'foldDirtyCounters',
        'foldViews',
        'hasFacts',
        'indexReactions',
        'inspectCounters',
        'leaseSockets',
        'persistedAsOf',
        'publishUserCounts',
        'raisePosition',
        'readLeasedStream',
        'recordViews',
        'rebuildCounters',
        'releaseLease',
        'renewLease',
        'restoreViews',
        'setRelation',
        'setUserCounters',
        'storePersistedQuery',
        'switchReplayedCounters',
        'takeTokens',
        'takeViewSnapshots',
        'writeFact',
      ].sort(),
    );
    for (const script of scripts) expect(script.lua).not.toMatch(/@include/);
  });

  it.each(scripts.map((s) => [s.name, s] as const))('%s compiles in Redis', async (_, script) => {
    expect(await redis.script('LOAD', script.lua)).toMatch(/^[0-9a-f]{40}$/);
  });

  it('reach callers as typed calls: a refused call is a ScriptError with a code of the closed set', async () => {
    const scripts = createScripts(withScripts(redis), createKeys(uniquePrefix('ls'), 4));
    const refused = await scripts.takeTokens({ bucket: 'unused', capacity: 0, windowMs: 1000, wanted: 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ScriptError);
    expect(refused).toMatchObject({ script: 'takeTokens', code: ScriptErrorCode.InvalidArguments });
    expect(await scripts.raisePosition('unused', 'not-a-position').catch((e: unknown) => (e as ScriptError).code)).toBe(
      ScriptErrorCode.InvalidArguments,
    );
  });
});
