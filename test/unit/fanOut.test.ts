import { setImmediate as nextTurn } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { createFanOut } from '../../src/live/fanOut.js';
import { LiveStream } from '../../src/live/liveStream.js';

/** A subscription as graphql-ws reads it: every push it takes, in order. */
function reader() {
  const taken: [number, string][] = [];
  const stream = new LiveStream<string>({ stallMs: 60_000, onStall: () => {}, onEnd: () => {} });
  void (async () => {
    for await (const value of stream) taken.push([Number(value.split(':')[0]), value]);
  })();
  return { stream, taken };
}

describe('createFanOut', () => {
  it('hands out at most its share per event-loop turn, a subscription’s pushes together', async () => {
    const fanOut = createFanOut({ perTurn: 10 });
    const readers = Array.from({ length: 6 }, reader);
    for (const [n, { stream }] of readers.entries()) {
      for (let id = 0; id < 4; id++) fanOut.push(stream, id, `${id}:s${n}`);
    }
    expect(fanOut.pending()).toBe(24);
    const perTurn: number[] = [];
    while (fanOut.pending() > 0) {
      const before = fanOut.pending();
      await nextTurn();
      perTurn.push(before - fanOut.pending());
    }
    await nextTurn();
    // 10 per turn, rounded up to whole subscriptions (4 pushes each).
    expect(perTurn).toEqual([12, 12]);
    for (const [n, { taken }] of readers.entries()) {
      expect(taken.map(([, v]) => v)).toEqual([0, 1, 2, 3].map((id) => `${id}:s${n}`));
    }
  });

  it('keeps the newest push per entity while one waits for its turn', async () => {
    let dropped = 0;
    const fanOut = createFanOut({ onDropped: () => (dropped += 1) });
    const { stream, taken } = reader();
    fanOut.push(stream, 1, '1:old');
    fanOut.push(stream, 2, '2:only');
    fanOut.push(stream, 1, '1:new');
    await nextTurn();
    await nextTurn();
    expect(taken.map(([, v]) => v)).toEqual(['1:new', '2:only']);
    expect(dropped).toBe(1);
  });
});

describe('LiveStream', () => {
  it('drops a queued push that is no longer visible when the socket takes it, and never waits on one', async () => {
    const hidden = new Set<string>();
    let stalls = 0;
    const stream = new LiveStream<string>({
      stallMs: 0,
      stillVisible: (value) => !hidden.has(value),
      onStall: () => (stalls += 1),
      onEnd: () => {},
    });
    stream.offer(1, 'erased-author');
    stream.offer(2, 'kept');
    hidden.add('erased-author'); // an erasure began after the push was queued
    expect(await stream.next()).toEqual({ value: 'kept', done: false });

    // A reader waits; an invisible push neither reaches it nor sits queued (no stall).
    const next = stream.next();
    stream.offer(1, 'erased-author');
    stream.checkStall(Date.now() + 1);
    expect(stalls).toBe(0);
    stream.offer(3, 'later');
    expect(await next).toEqual({ value: 'later', done: false });
  });
});
