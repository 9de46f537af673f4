import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { loadScripts } from '../../src/redis/scripts.js';
import { TEST_REDIS_URL } from '../support/env.js';

const redis = new Redis(TEST_REDIS_URL);
afterAll(() => redis.disconnect());

describe('lua scripts', () => {
  const scripts = loadScripts();

  it('are found, named <verbNoun>-<keys>.lua, with includes inlined', () => {
    expect(scripts.map((s) => s.name).sort()).toEqual(
      [
        'acquireRebuild',
        'applyCounterBatch',
        'countFromFacts',
        'foldDirtyCounters',
        'hasFacts',
        'inspectCounters',
        'persistedAsOf',
        'raisePosition',
        'rebuildCounters',
        'releaseLease',
        'renewLease',
        'setRelation',
        'setUserCounters',
        'storePersistedQuery',
        'switchReplayedCounters',
        'takeTokens',
        'writeFact',
      ].sort(),
    );
    for (const script of scripts) expect(script.lua).not.toMatch(/@include/);
  });

  it.each(scripts.map((s) => [s.name, s] as const))('%s compiles in Redis', async (_, script) => {
    expect(await redis.script('LOAD', script.lua)).toMatch(/^[0-9a-f]{40}$/);
  });
});
