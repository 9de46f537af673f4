// The views' Lua side against Redis: the sketch of distinct viewers (exact up to its limit, a
// HyperLogLog past it), and counters rebuilt from the facts or switched to replayed sums
// keeping the view slots that neither the facts nor the event log hold.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createRebuilder } from '../../src/counters/rebuild.js';
import { VIEW_SLOTS } from '../../src/domain/counters.js';
import { POST } from '../../src/domain/entities.js';
import { LIKE } from '../../src/domain/relations.js';
import { createReadiness } from '../../src/recovery/readiness.js';
import { ScriptErrorCode } from '../../src/redis/scriptErrors.js';
import { createScripts } from '../../src/redis/scripts.js';
import { createViewerDigests } from '../../src/services/viewerDigests.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 1 });
});
afterEach(() => f.close());

const digests = createViewerDigests('test views secret');
const post = (id: number) => ({ type: POST, id });

/** Views of post `id` by users `from`..`from + n - 1`, 1,000 per script call, as recordViews adds them. */
async function view(id: number, from: number, n: number) {
  const scripts = createScripts(f.redis, f.keys);
  for (let start = from; start < from + n; start += 1000) {
    const users = Array.from({ length: Math.min(1000, from + n - start) }, (_, i) => start + i);
    await scripts.addViews(users.map((u) => ({ entity: post(id), digest: digests.user(u) })));
  }
}
/** What the views job does before it persists: adds the buffered viewers to the sketches (as a flush does) and counts a HyperLogLog's. */
async function recount(id: number) {
  const partition = f.keys.partitionOf(post(id));
  while ((await f.redis.llen(f.keys.viewBuffer(partition))) > 0) await f.flusher.foldViews(partition);
  await createReadiness(f.redis, f.keys).markAllReady();
  await createScripts(f.redis, f.keys).takeViewSnapshots({ partition, limit: 10 });
}
const viewsOf = async (id: number) => {
  const counters = (await f.countersOf(id)) ?? [];
  return { total: counters[VIEW_SLOTS.total] ?? 0, unique: counters[VIEW_SLOTS.unique] ?? 0 };
};
const sketchType = async (id: number) => ((await f.redis.getrange(f.keys.viewers(post(id)), 0, 3)) === 'HYLL' ? 'hll' : 'exact');

describe('distinct viewers', () => {
  it('are exact up to the limit, again nothing for a repeat, and estimated within 1 % just past it', async () => {
    await f.postCounters.initialize(1);
    await view(1, 1, 1000);
    await view(1, 1, 1000); // the same thousand again: the total moves, the unique count does not
    await recount(1);
    await f.flusher.foldPartitions([0]);
    expect(await viewsOf(1)).toEqual({ total: 2000, unique: 1000 });
    expect(await sketchType(1)).toBe('exact');

    await view(1, 1001, 10);
    await recount(1);
    await f.flusher.foldPartitions([0]);
    expect(await sketchType(1)).toBe('hll');
    expect(Math.abs((await viewsOf(1)).unique - 1010) / 1010).toBeLessThan(0.01);
  });

  it('are within 2 % at 100,000, and the count in the counters is the sketch’s estimate once the snapshot job counted it', async () => {
    await f.postCounters.initialize(2);
    await view(2, 1, 100_000);
    await recount(2);
    await f.flusher.foldPartitions([0]);
    const { total, unique } = await viewsOf(2);
    expect(total).toBe(100_000);
    expect(Math.abs(unique - 100_000) / 100_000).toBeLessThan(0.02);
    expect(unique).toBe(await f.redis.pfcount(f.keys.viewers(post(2))));
  }, 60_000);
});

describe('an exact list of viewers', () => {
  const sketchKey = (id: number) => f.keys.viewers(post(id));
  /** Views of post `id` by the viewers whose digests are these 48-bit values, added up. */
  async function viewByDigests(id: number, values: readonly number[]) {
    await createScripts(f.redis, f.keys).addViews(values.map((v) => ({ entity: post(id), digest: String(v) })));
    await recount(id);
    await f.flusher.foldPartitions([0]);
  }
  const digestsIn = async (id: number) => {
    const raw = (await f.redis.getBuffer(sketchKey(id)))!;
    const width = raw[0]!;
    return Array.from({ length: (raw.length - 1) / width }, (_, i) => raw.readUIntBE(1 + i * width, width));
  };
  const six = (bytes: number[]) => Buffer.from(bytes).readUIntBE(0, 6);

  it('finds a viewer only where a digest starts: the same bytes across two digests are a new one', async () => {
    await f.postCounters.initialize(8);
    const [a, b] = [six([0x11, 0x22, 0x33, 0x44, 0x55, 0x66]), six([0x77, 0x88, 0x99, 0xaa, 0xbb, 0xcc])];
    await viewByDigests(8, [a, b]);
    const across = six([0x44, 0x55, 0x66, 0x77, 0x88, 0x99]); // a's last three bytes, b's first three
    await viewByDigests(8, [across, a]);
    expect(await viewsOf(8)).toEqual({ total: 4, unique: 3 });
    expect(await digestsIn(8)).toEqual([a, b, across]);
  });

  it('reads a list written sorted and narrower before, and widens it with the next viewer', async () => {
    await f.postCounters.initialize(9);
    await viewByDigests(9, [5, 9]); // digests below 2^32: as this version writes any list, 6 bytes each
    const narrow = Buffer.from([4, 0, 0, 0, 5, 0, 0, 0, 9]); // how a version before wrote those two
    await f.redis.set(sketchKey(9), narrow);
    await viewByDigests(9, [9, 2 ** 47 + 1]);
    expect(await viewsOf(9)).toEqual({ total: 4, unique: 3 });
    expect(await digestsIn(9)).toEqual([5, 9, 2 ** 47 + 1]);
    expect((await f.redis.getBuffer(sketchKey(9)))![0]).toBe(6);
  });
});

describe('counters rebuilt or replayed', () => {
  it('keep the views, folded and pending, when rebuilt from the facts', async () => {
    await f.postCounters.initialize(3);
    for (let u = 1; u <= 3; u++) await f.set(u, 3);
    await view(3, 1, 5);
    await recount(3);
    await f.flusher.foldPartitions([0]);
    await view(3, 6, 2); // pending in the aggregation hash when the rebuild drops it
    await recount(3);
    const { counters } = await createRebuilder({ redis: f.redis, keys: f.keys, lockMs: 1000 }).rebuild(post(3));
    expect([counters[VIEW_SLOTS.total], counters[VIEW_SLOTS.unique]]).toEqual([7, 7]);
    await f.flusher.foldPartitions([0]);
    expect(await viewsOf(3)).toEqual({ total: 7, unique: 7 });
  });

  it('keep the pending views when a fold finds the counters missing and starts from the facts', async () => {
    await view(4, 1, 4); // no counters yet: the fold rebuilds them
    await recount(4);
    await f.flusher.foldPartitions([0]);
    expect(await viewsOf(4)).toEqual({ total: 4, unique: 4 });
  });

  it('keep the views when switched to the sums replayed from the event log', async () => {
    await f.postCounters.initialize(5);
    await f.set(1, 5);
    await view(5, 1, 3);
    await recount(5);
    await f.flusher.foldPartitions([0]);
    // Replay summed the one like; the switch takes that, and the views as they stand.
    const through = (await f.redis.xrevrange(f.keys.outbox(0), '+', '-', 'COUNT', 1))[0]![0];
    await f.redis.hset(`${f.keys.replayedPrefix(0)}post:5`, '1', '1');
    await f.redis.sadd(f.keys.replayedEntities(0), 'post:5');
    await f.redis.hset(f.keys.aggState(0), 'event', through);
    const { switched } = await createScripts(f.redis, f.keys).switchReplayedCounters({ partition: 0, through, limit: 10 });
    expect(switched).toBe(1);
    expect(await f.countersOf(5)).toEqual([3, 1, 0, 3, 0]);
  });
});

describe('a backlog of views', () => {
  it('never holds the likes back: a fold adds up at most 20,000, and asOf waits until the buffer was emptied', async () => {
    await f.postCounters.initialize(6);
    await f.set(1, 6);
    await f.aggregator.applyBatch(await f.batchOf(0));
    await view(6, 1, 25_000);
    const flushedAt = async () => Number(await f.redis.get(f.keys.flushed(0)));
    const before = Date.now();
    await f.flusher.foldPartitions([0]);
    expect((await f.countersOf(6))![LIKE.slot!]).toBe(1); // the like is in, the views are not all in
    expect((await viewsOf(6)).total).toBe(20_000);
    expect(await flushedAt()).toBeLessThan(before); // no asOf promises the views still buffered
    await f.flusher.foldPartitions([0]);
    expect((await viewsOf(6)).total).toBe(25_000);
    expect(await flushedAt()).toBeGreaterThanOrEqual(before);
  }, 30_000);
});

describe('recording a viewer’s views in one step (a single Redis)', () => {
  const window = () => f.keys.viewWindow(7);
  const budget = () => ({ bucket: f.keys.rateLimit('views', 7), capacity: 3, windowMs: 60_000 });
  const recordCharged = (digest: string, ids: number[], wanted?: number) =>
    createScripts(f.redis, f.keys).recordViews({
      window: window(),
      windowMs: 60_000,
      digest,
      entities: ids.map(post),
      ...(wanted !== undefined && { budget: { ...budget(), wanted } }),
    });
  const record = async (digest: string, ids: number[]) => (await recordCharged(digest, ids)).counted;

  it('counts each entity once per window and buffers exactly the views that counted', async () => {
    expect(await record(digests.user(7), [1, 2])).toEqual([true, true]);
    expect(await record(digests.user(7), [2, 3])).toEqual([false, true]);
    expect(await f.redis.lrange(f.keys.viewBuffer(0), 0, -1)).toEqual(
      ['post:1', 'post:2', 'post:3'].map((name) => `${name} ${digests.user(7)}`),
    );
  });

  it('takes the views budget with the views, all or nothing: a refused page records nothing', async () => {
    expect(await recordCharged(digests.user(7), [1, 2], 2)).toEqual({ refusedForMs: 0, counted: [true, true] });
    const refused = await recordCharged(digests.user(7), [3, 4], 2); // one token left of three
    expect(refused.refusedForMs).toBeGreaterThan(0);
    expect(refused.counted).toEqual([]);
    expect(await f.redis.hkeys(window())).toEqual(['post:1', 'post:2']);
    expect(await f.redis.llen(f.keys.viewBuffer(0))).toBe(2);
    // A page with nothing that may count is still charged (an anonymous page where those count not at all).
    expect(await recordCharged('', [], 1)).toEqual({ refusedForMs: 0, counted: [] });
    expect((await recordCharged(digests.user(7), [3], 1)).refusedForMs).toBeGreaterThan(0);
  });

  it('refuses a malformed digest before it writes anything', async () => {
    await expect(record('not a digest', [1])).rejects.toMatchObject({ code: ScriptErrorCode.InvalidArguments });
    // A leading zero too: a HyperLogLog is fed the digest's text, which must be the one a list's digest is written as.
    await expect(record('0123', [1])).rejects.toMatchObject({ code: ScriptErrorCode.InvalidArguments });
    expect(await f.redis.exists(window(), f.keys.viewBuffer(0))).toBe(0);
  });
});
