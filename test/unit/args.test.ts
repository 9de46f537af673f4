import { describe, expect, it } from 'vitest';
import { parseId, parseIds, parsePageSize } from '../../src/graphql/args.js';
import { codeOf } from '../support/errors.js';

describe('parseId', () => {
  it('accepts positive decimal integers below 2^53', () => {
    expect(parseId('1')).toBe(1);
    expect(parseId('9007199254740991')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each(['0', '-1', '01', '1.5', '1e3', ' 1', 'abc', '', '9007199254740992', '99999999999999999999'])(
    'rejects %j as BAD_USER_INPUT',
    (raw) => expect(codeOf(() => parseId(raw))).toBe('BAD_USER_INPUT'),
  );
});

describe('parseIds', () => {
  it('keeps order and accepts exactly 100', () => {
    const ids = Array.from({ length: 100 }, (_, i) => String(100 - i));
    expect(parseIds(ids)).toEqual(ids.map(Number));
  });

  it('rejects 101 ids', () => {
    expect(codeOf(() => parseIds(Array.from({ length: 101 }, () => '1')))).toBe('BAD_USER_INPUT');
  });
});

describe('parsePageSize', () => {
  it('defaults to 20 and accepts 1..100', () => {
    expect(parsePageSize(undefined)).toBe(20);
    expect(parsePageSize(null)).toBe(20);
    expect(parsePageSize(1)).toBe(1);
    expect(parsePageSize(100)).toBe(100);
  });

  it.each([0, -5, 101])('rejects %d', (n) => expect(codeOf(() => parsePageSize(n))).toBe('BAD_USER_INPUT'));
});
