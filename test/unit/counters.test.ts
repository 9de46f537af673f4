import { describe, expect, it } from 'vitest';
import { packCounters, packedCounter, unpackCounters } from '../../src/counters/packedCounters.js';
import { decodeOutboxEntry } from '../../src/events/outboxCodec.js';
import { ownerOf } from '../../src/events/partitionAssignment.js';
import { comparePositions } from '../../src/events/types.js';
import { createKeys } from '../../src/redis/keys.js';
import { fnv1a32 } from '../../src/redis/partition.js';

describe('packed counters', () => {
  it('is at least 5 big-endian uint32 fields, 20 bytes', () => {
    const raw = packCounters([1, 2, 3, 4, 4294967295]);
    expect(raw).toHaveLength(20);
    expect(raw.subarray(4, 8)).toEqual(Buffer.from([0, 0, 0, 2]));
    expect(unpackCounters(raw)).toEqual([1, 2, 3, 4, 4294967295]);
    expect(packCounters([0, 7])).toEqual(packCounters([0, 7, 0, 0, 0]));
  });

  it('ends at its last non-zero slot; slots past the end read as 0 (a kind added later needs no migration)', () => {
    const raw = packCounters([0, 1, 0, 0, 0, 0, 0, 3, 0, 0]);
    expect(raw).toHaveLength(32);
    expect(unpackCounters(raw)).toEqual([0, 1, 0, 0, 0, 0, 0, 3]);
    expect(packedCounter(raw, 7)).toBe(3);
    expect(packedCounter(raw, 12)).toBe(0);
    expect(packCounters([0, 1, 0, 0, 0, 0, 0, 0])).toHaveLength(20);
  });

  it('reads a missing or wrong-length value as null, never as zeros', () => {
    expect(unpackCounters(null)).toBeNull();
    expect(unpackCounters(Buffer.alloc(16))).toBeNull();
    expect(unpackCounters(Buffer.alloc(21))).toBeNull();
    expect(unpackCounters(Buffer.alloc(65 * 4))).toBeNull();
  });
});

describe('keys and partitions', () => {
  it('uses a stable FNV-1a hash (the partition of existing data must never move)', () => {
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('foobar')).toBe(0xbf9cf968);
  });

  it('puts every key of one entity in one hash slot, named with the documented prefixes', () => {
    const keys = createKeys('', 16);
    const post = { type: 'post' as const, id: 42 };
    const tag = `{p${keys.partitionOf(post)}}`;
    const all = [
      keys.bitmapChunk('like', post, 3),
      keys.chunkIndex('like', post),
      keys.arrayBlock('like', post, 0),
      keys.arrayIndex('like', post),
      keys.agg(post),
      keys.counters(post),
      keys.idempotency(post, 7, 'k'),
      keys.outbox(keys.partitionOf(post)),
      keys.dirty(keys.partitionOf(post)),
    ];
    for (const key of all) expect(key.match(/\{[^}]*\}/)?.[0]).toBe(tag);
    expect(keys.bitmapChunk('like', post, 3)).toBe(`bm:${tag}:like:post:42:3`);
    expect(keys.arrayBlock('like', post, 0)).toBe(`ra:${tag}:like:post:42:0`);
    expect(`${keys.partitionTag(keys.partitionOf(post))}:${keys.relationBase('like', post)}`).toBe(`${tag}:like:post:42`);
    expect(keys.counters(post)).toBe(`cnt:${tag}:v1:post:42`);
    expect(keys.agg(post)).toBe(`agg:${tag}:v1:post:42`);
  });

  it('prepends REDIS_KEY_PREFIX before the documented prefix', () => {
    expect(createKeys('t1:', 4).counters({ type: 'post' as const, id: 1 })).toMatch(/^t1:cnt:\{p\d\}:v1:post:1$/);
  });

  it('spreads entities over partitions', () => {
    const keys = createKeys('', 16);
    const used = new Set(Array.from({ length: 500 }, (_, i) => keys.partitionOf({ type: 'post' as const, id: i + 1 })));
    expect(used.size).toBe(16);
  });
});

describe('rendezvous assignment', () => {
  const members = ['host-a:1:aaaaaa', 'host-a:2:bbbbbb', 'host-b:1:cccccc'];

  it('gives every member a share of the partitions', () => {
    const owners = Array.from({ length: 64 }, (_, p) => ownerOf(p, members));
    for (const member of members) expect(owners.filter((o) => o === member).length).toBeGreaterThan(10);
  });

  it('moves only the partitions of a member that leaves', () => {
    const before = Array.from({ length: 64 }, (_, p) => ownerOf(p, members));
    const after = Array.from({ length: 64 }, (_, p) => ownerOf(p, members.slice(0, 2)));
    before.forEach((owner, p) => {
      if (owner !== members[2]) expect(after[p]).toBe(owner);
    });
  });
});

describe('log positions and outbox entries', () => {
  it('compares positions numerically, not as text', () => {
    expect(comparePositions('9-0', '10-0')).toBe(-1);
    expect(comparePositions('10-2', '10-10')).toBe(-1);
    expect(comparePositions('10-10', '10-10')).toBe(0);
  });

  it('decodes an entry the Lua script wrote, and refuses one it did not', () => {
    const fields = ['e', 'post', 'i', '42', 'm', 'like', 'x', '1', 'u', '7', 'a', '3', 'd', '-1'];
    expect(decodeOutboxEntry('1700000000000-4', 5, fields)).toEqual({
      id: '1700000000000-4',
      partition: 5,
      entityType: 'post',
      entityId: 42,
      relation: 'like',
      slot: 1,
      userId: 7,
      authorId: 3,
      delta: -1,
      ts: 1700000000000,
    });
    expect(decodeOutboxEntry('1-0', 0, ['e', 'post'])).toBeNull();
    expect(
      decodeOutboxEntry(
        '1-0',
        0,
        fields.map((v) => (v === '-1' ? '5' : v)),
      ),
    ).toBeNull();
  });
});
