import { describe, expect, it } from 'vitest';
import { createGroupCommit } from '../../src/consumers/groupCommit.js';

/** A write that takes until `release()` and records what each call got. */
function slowWrite() {
  const calls: number[][] = [];
  let release: () => void = () => {};
  let fail: Error | null = null;
  const write = (items: number[]) => {
    calls.push(items);
    return new Promise<void>((resolve, reject) => {
      release = () => (fail ? reject(fail) : resolve());
    });
  };
  return { calls, write, release: () => release(), failNext: (error: Error) => (fail = error) };
}

describe('createGroupCommit', () => {
  it('writes a batch at once when idle, and the batches that arrive meanwhile together next', async () => {
    const w = slowWrite();
    const join = createGroupCommit(w.write, 100);
    const first = join([1]);
    const second = join([2, 3]);
    const third = join([4]);
    expect(w.calls).toEqual([[1]]);
    w.release();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(w.calls).toEqual([[1], [2, 3, 4]]);
    w.release();
    await Promise.all([second, third]);
  });

  it('keeps a group within maxItems', async () => {
    const w = slowWrite();
    const join = createGroupCommit(w.write, 3);
    const all = [join([1]), join([2, 3]), join([4, 5]), join([6])];
    for (let i = 0; i < 3; i++) {
      w.release();
      await new Promise((r) => setImmediate(r));
    }
    await Promise.all(all);
    expect(w.calls).toEqual([[1], [2, 3], [4, 5, 6]]);
  });

  it('fails every batch of a failed write, and writes the next group after it', async () => {
    const w = slowWrite();
    const join = createGroupCommit(w.write, 100);
    const first = join([1]);
    const waiting = [join([2]), join([3])];
    w.failNext(new Error('deadlock'));
    w.release();
    await expect(first).rejects.toThrow('deadlock');
    await new Promise((r) => setImmediate(r));
    w.release();
    for (const batch of waiting) await expect(batch).rejects.toThrow('deadlock');
    const later = join([4]);
    expect(w.calls.at(-1)).toEqual([4]);
    w.failNext(null as unknown as Error);
    w.release();
    await later;
  });
});
