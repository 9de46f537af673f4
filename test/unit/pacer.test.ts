import { describe, expect, it } from 'vitest';
import { createPacer } from '../../src/jobs/pacer.js';

/** A clock the test moves: `work(ms)` is a step that took that long; sleeps are recorded. */
function fakeClock() {
  let now = 0;
  const sleeps: number[] = [];
  return {
    sleeps,
    work: (ms: number) => {
      now += ms;
    },
    clock: {
      now: () => now,
      sleep: async (ms: number) => {
        sleeps.push(ms);
        now += ms;
      },
    },
    elapsed: () => now,
  };
}

describe('createPacer', () => {
  it('sleeps nine times as long as the work took at 10 percent busy', async () => {
    const t = fakeClock();
    const pacer = createPacer(10, t.clock);
    t.work(6);
    await pacer.pace();
    expect(t.sleeps).toEqual([54]);
  });

  it('lets short steps run on until they add up to a chunk of about 5 ms, then sleeps for the chunk', async () => {
    const t = fakeClock();
    const pacer = createPacer(50, t.clock);
    for (let i = 0; i < 4; i++) {
      t.work(1);
      await pacer.pace();
    }
    expect(t.sleeps).toEqual([]);
    t.work(1);
    await pacer.pace();
    expect(t.sleeps).toEqual([5]);
  });

  it('keeps the work to its share of the time over many steps', async () => {
    const t = fakeClock();
    const pacer = createPacer(10, t.clock);
    for (let i = 0; i < 1000; i++) {
      t.work(0.3);
      await pacer.pace();
    }
    expect((1000 * 0.3) / t.elapsed()).toBeCloseTo(0.1, 2);
    expect(Math.max(...t.sleeps)).toBeLessThan(60); // a trickle, not bursts with long gaps
  });

  it('counts the time between steps, not the sleeps, as work', async () => {
    const t = fakeClock();
    const pacer = createPacer(20, t.clock);
    t.work(10);
    await pacer.pace();
    t.work(10);
    await pacer.pace();
    expect(t.sleeps).toEqual([40, 40]);
  });

  it('never sleeps at 100 percent', async () => {
    const t = fakeClock();
    const pacer = createPacer(100, t.clock);
    t.work(1000);
    await pacer.pace();
    expect(t.sleeps).toEqual([]);
  });

  it.each([0, -5, 101, Number.NaN])('rejects a share of %s', (busy) => {
    expect(() => createPacer(busy)).toThrow(TypeError);
  });
});
