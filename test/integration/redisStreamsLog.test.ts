import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { trimOutbox } from '../../src/events/outboxTrimmer.js';
import { ownerOf } from '../../src/events/partitionAssignment.js';
import { comparePositions, type EventBatch } from '../../src/events/types.js';
import { createScripts } from '../../src/redis/scripts.js';
import { type CounterFixture, createCounterFixture } from '../support/counterFixture.js';
import { waitUntil } from '../support/wait.js';

let f: CounterFixture;
beforeEach(() => {
  f = createCounterFixture({ partitions: 8, leaseMs: 600 });
});
afterEach(() => f.close());

/** A handler that records which member saw which event. */
function recorder() {
  const seen = new Map<string, number>();
  const partitions = new Set<number>();
  const handler = async (batch: EventBatch) => {
    partitions.add(batch.partition);
    // Event ids are unique within a partition only.
    for (const { event } of batch.entries) {
      const key = `${event.partition}/${event.id}`;
      seen.set(key, (seen.get(key) ?? 0) + 1);
    }
  };
  return { seen, partitions, handler };
}

async function writeLikes(from: number, to: number) {
  for (let u = from; u <= to; u++) await f.set(u, 1000 + (u % 40));
}

describe('Redis Streams event log', () => {
  it('splits partitions between members, delivers every event once, and hands partitions over when a member leaves', async () => {
    // Two members: two processes' logs (a process is one member of each group).
    const [a, b] = [recorder(), recorder()];
    const subA = f.eventLog(5).subscribe('test-group', a.handler);
    const subB = f.eventLog(5).subscribe('test-group', b.handler);
    await subA.start();
    await subB.start();
    await waitUntil(
      async () => {
        const [ownedA, ownedB] = [subA.assignedPartitions(), subB.assignedPartitions()];
        return ownedA.length > 0 && ownedB.length > 0 && ownedA.length + ownedB.length === f.partitions;
      },
      { what: 'the group to settle', timeoutMs: 30_000 },
    );
    expect(subA.assignedPartitions().filter((p) => subB.assignedPartitions().includes(p))).toEqual([]);

    await writeLikes(1, 200);
    const total = () => a.seen.size + b.seen.size;
    await waitUntil(async () => total() === 200, { what: 'all 200 events', timeoutMs: 30_000 });
    expect([...a.seen.keys()].filter((id) => b.seen.has(id))).toEqual([]); // never both
    expect([...a.seen.values(), ...b.seen.values()].every((n) => n === 1)).toBe(true);
    expect(a.partitions.size).toBeGreaterThan(0);
    expect(b.partitions.size).toBeGreaterThan(0);

    await subA.stop();
    await writeLikes(201, 300);
    await waitUntil(async () => total() === 300, { what: 'the survivor to take every partition', timeoutMs: 30_000 });
    expect(b.partitions.size).toBe(f.partitions);
    await subB.stop();
  }, 90_000);

  it('keeps entries a group has not consumed and trims them once every group has', async () => {
    await writeLikes(1, 40);
    const stream = (p: number) => f.keys.outbox(p);
    const lengths = async () => Promise.all(f.allPartitions.map((p) => f.redis.xlen(stream(p))));
    for (const p of f.allPartitions) {
      await f.redis.xgroup('CREATE', stream(p), 'fast', '0', 'MKSTREAM');
      await f.redis.xgroup('CREATE', stream(p), 'slow', '0', 'MKSTREAM');
    }
    const before = await lengths();
    // "fast" reads and acknowledges everything; "slow" has not read anything yet.
    for (const p of f.allPartitions) {
      const read = (await f.redis.xreadgroup('GROUP', 'fast', 'c', 'COUNT', 1000, 'STREAMS', stream(p), '>')) as
        | [string, [string, string[]][]][]
        | null;
      const ids = read?.[0]?.[1].map(([id]) => id) ?? [];
      if (ids.length) await f.redis.xack(stream(p), 'fast', ...ids);
      await trimOutbox(f.redis, stream(p), 0);
    }
    expect(await lengths()).toEqual(before);

    // "slow" reads everything but acknowledges only the first entry of each partition.
    for (const p of f.allPartitions) {
      const read = (await f.redis.xreadgroup('GROUP', 'slow', 'c', 'COUNT', 1000, 'STREAMS', stream(p), '>')) as
        | [string, [string, string[]][]][]
        | null;
      const ids = read?.[0]?.[1].map(([id]) => id) ?? [];
      if (ids.length) await f.redis.xack(stream(p), 'slow', ids[0]!);
      await trimOutbox(f.redis, stream(p), 0);
    }
    // Everything from the first unacknowledged entry on is kept.
    expect(await lengths()).toEqual(before.map((n) => Math.max(0, n - 1)));

    // Nothing is trimmed inside the retention window, consumed or not.
    await writeLikes(41, 60);
    for (const p of f.allPartitions) {
      await f.redis.xgroup('SETID', stream(p), 'slow', '$');
      await f.redis.xgroup('SETID', stream(p), 'fast', '$');
      await trimOutbox(f.redis, stream(p), 60_000);
    }
    expect((await lengths()).reduce((x, y) => x + y)).toBe(60 - f.partitions);
  });
});

describe('a partition lease fences the reads', () => {
  // One partition and a lease far longer than the test: a member that lost its lease does not
  // notice it before the end, which is the case the fence is for.
  let g: CounterFixture;
  beforeEach(() => {
    g = createCounterFixture({ partitions: 1, leaseMs: 60_000 });
  });
  afterEach(() => g.close());

  it('reads nothing for a member that does not hold the lease, and hands its pending entries to the holder', async () => {
    for (let u = 1; u <= 6; u++) await g.set(u, 1000);
    const stream = g.keys.outbox(0);
    await g.redis.xgroup('CREATE', stream, 'g', '0', 'MKSTREAM');
    const scripts = createScripts(g.redis, g.keys);
    const read = (member: string, what: { claim: string } | 'new') =>
      scripts.readLeasedStream({ partition: 0, group: 'g', member, read: what, count: 4 });
    const pending = async () => ((await g.redis.xpending(stream, 'g')) as [number, ...unknown[]])[0];

    expect(await read('a', 'new')).toBeNull(); // nobody holds the lease
    await g.redis.set(g.keys.lease(0, 'g'), 'a');
    expect(await read('b', 'new')).toBeNull();
    expect(await read('b', { claim: '0-0' })).toBeNull();
    expect(await pending()).toBe(0);

    const first = await read('a', 'new');
    expect(first?.entries.map(([id]) => id)).toHaveLength(4);
    expect(await pending()).toBe(4);

    // The lease moves to b: a reads nothing more, b takes a's pending entries, then the rest.
    await g.redis.set(g.keys.lease(0, 'g'), 'b');
    expect(await read('a', 'new')).toBeNull();
    const claimed = await read('b', { claim: '0-0' });
    expect(claimed?.entries.map(([id]) => id)).toEqual(first?.entries.map(([id]) => id));
    expect(claimed?.next).toBe('0-0');
    const rest = await read('b', 'new');
    const all = (await g.redis.xrange(stream, '-', '+')) as [string, string[]][];
    expect([...claimed!.entries, ...rest!.entries].map(([id]) => id)).toEqual(all.map(([id]) => id));
  });

  it('keeps a member whose lease was taken, but who has not noticed, from taking entries the new owner needs', async () => {
    // Names such that the rendezvous hash gives the partition to b once both are members.
    const a = 'member-a';
    const b = ['member-b', 'member-c', 'member-d', 'member-e'].find((name) => ownerOf(0, [a, name]) === name)!;
    const seenBy = { [a]: [] as string[], [b]: [] as string[] };
    const subscribe = (member: string) =>
      g.eventLog(100, member).subscribe('fenced', async (batch) => {
        seenBy[member]!.push(...batch.entries.map((e) => e.position));
      });
    const subA = subscribe(a);
    await subA.start();
    expect(subA.assignedPartitions()).toEqual([0]);
    for (let u = 1; u <= 5; u++) await g.set(u, 1000);
    await waitUntil(async () => seenBy[a]!.length === 5, { what: 'a to read the first five events' });

    // b takes the lease over (as after a's heartbeats failed); a goes on polling every 10 ms.
    await g.redis.set(g.keys.lease(0, 'fenced'), b, 'PX', 60_000);
    for (let u = 6; u <= 50; u++) await g.set(u, 1000);
    const subB = subscribe(b);
    await subB.start();
    await waitUntil(async () => seenBy[b]!.length >= 45, { what: 'b to read the 45 events written after it took over' });

    // (Acknowledged entries are trimmed at once here: compare what each member saw.)
    const inOrder = (ids: string[]) => [...ids].sort((x, y) => comparePositions(x, y));
    expect(seenBy[a]).toHaveLength(5);
    expect(seenBy[b]).toHaveLength(45);
    expect(seenBy[b]).toEqual(inOrder(seenBy[b]!));
    expect(comparePositions(seenBy[b]![0]!, seenBy[a]!.at(-1)!)).toBeGreaterThan(0);
    await subB.stop();
    await subA.stop();
  }, 60_000);
});
