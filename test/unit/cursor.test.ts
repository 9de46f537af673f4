import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/graphql/cursor.js';
import { codeOf } from '../support/errors.js';

const codec = createCursorCodec('cursor-secret');

describe('cursor codec', () => {
  it('round-trips a payload', () => {
    expect(codec.decode('feed', codec.encode('feed', [1700000000000, 42]))).toEqual([1700000000000, 42]);
  });

  it('refuses a cursor with any bit flipped', () => {
    const bytes = Buffer.from(codec.encode('feed', [1700000000000, 42]), 'base64url');
    for (let bit = 0; bit < bytes.length * 8; bit++) {
      const edited = Buffer.from(bytes);
      edited[bit >> 3]! ^= 1 << (bit & 7);
      expect(
        codeOf(() => codec.decode('feed', edited.toString('base64url'))),
        `bit ${bit}`,
      ).toBe('BAD_USER_INPUT');
    }
  });

  it('reveals nothing of its position: no id or time in its bytes, neighbours look unrelated', () => {
    const a = codec.encode('likers:like:7', [1700000000000, 42]);
    const b = codec.encode('likers:like:7', [1700000000000, 43]);
    for (const cursor of [a, b]) {
      const bytes = Buffer.from(cursor, 'base64url');
      expect(bytes.toString('latin1')).not.toMatch(/17000|42|43/);
      expect(cursor).not.toMatch(/MTcwMDAwMDAwMDAw|NDI|\./); // base64 of the digits, or a readable part
    }
    // Positions one apart share no prefix beyond chance.
    const [x, y] = [Buffer.from(a, 'base64url'), Buffer.from(b, 'base64url')];
    let same = 0;
    for (let i = 0; i < x.length; i++) if (x[i] === y[i]) same++;
    expect(same).toBeLessThan(4);
  });

  it('is the same for the same position, so readers of one page share one cursor', () => {
    expect(codec.encode('feed', [5, 6])).toBe(createCursorCodec('cursor-secret').encode('feed', [5, 6]));
  });

  it('refuses a cursor of another list, or signed with another secret', () => {
    const cursor = codec.encode('feed', [1, 2]);
    expect(codeOf(() => codec.decode('followers', cursor))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => createCursorCodec('other').decode('feed', cursor))).toBe('BAD_USER_INPUT');
  });

  it('refuses a valid cursor with characters appended', () => {
    expect(codeOf(() => codec.decode('feed', `${codec.encode('feed', [1, 2])}x`))).toBe('BAD_USER_INPUT');
  });

  it.each(['', 'garbage', 'a.b.c', '.', 'x'.repeat(600), '!!!.???', 'A'.repeat(40)])('refuses %j', (cursor) => {
    expect(codeOf(() => codec.decode('feed', cursor))).toBe('BAD_USER_INPUT');
  });
});
