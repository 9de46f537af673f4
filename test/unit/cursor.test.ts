import { describe, expect, it } from 'vitest';
import { createCursorCodec } from '../../src/graphql/cursor.js';
import { codeOf } from '../support/errors.js';

const codec = createCursorCodec('cursor-secret');


describe('cursor codec', () => {
  it('round-trips a payload', () => {
    expect(codec.decode('feed', codec.encode('feed', [1700000000000, 42]))).toEqual([1700000000000, 42]);
  });

  it('refuses a cursor whose payload was edited', () => {
    const cursor = codec.encode('feed', [1700000000000, 42]);
    const [, mac] = cursor.split('.');
    const forged = `${Buffer.from(JSON.stringify([1700000000000, 41])).toString('base64url')}.${mac}`;
    expect(codeOf(() => codec.decode('feed', forged))).toBe('BAD_USER_INPUT');
  });

  it('refuses a cursor of another list, or signed with another secret', () => {
    const cursor = codec.encode('feed', [1, 2]);
    expect(codeOf(() => codec.decode('followers', cursor))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => createCursorCodec('other').decode('feed', cursor))).toBe('BAD_USER_INPUT');
  });

  it('refuses a valid cursor with characters appended', () => {
    expect(codeOf(() => codec.decode('feed', `${codec.encode('feed', [1, 2])}x`))).toBe('BAD_USER_INPUT');
  });

  it.each(['', 'garbage', 'a.b.c', '.', 'x'.repeat(600), '!!!.???'])('refuses %j', (cursor) => {
    expect(codeOf(() => codec.decode('feed', cursor))).toBe('BAD_USER_INPUT');
  });
});
