import { describe, expect, it } from 'vitest';
import { checkText } from '../../src/text.js';
import { codeOf } from '../support/errors.js';

describe('checkText', () => {
  it('counts characters, not UTF-16 units', () => {
    expect(checkText('😀'.repeat(200), 'title', 1, 200)).toHaveLength(400);
    expect(codeOf(() => checkText('😀'.repeat(201), 'title', 1, 200))).toBe('BAD_USER_INPUT');
  });

  it('rejects blank required text and NUL characters', () => {
    expect(codeOf(() => checkText('   ', 'title', 1, 200))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => checkText('a\u0000b', 'body', 0, 200))).toBe('BAD_USER_INPUT');
    expect(checkText('', 'body', 0, 200)).toBe('');
  });

  it.each([
    ['zero-width spaces', '\u200b\u200b\u200b'],
    ['a byte order mark and a zero-width joiner', '\ufeff\u200d'],
    ['no-break and ideographic spaces', '\u00a0\u3000'],
    ['a Hangul filler', '\u3164'],
  ])('calls text of only %s blank', (_, text) => {
    expect(codeOf(() => checkText(text, 'title', 1, 200))).toBe('BAD_USER_INPUT');
    expect(checkText(`${text}x`, 'title', 1, 200)).toBe(`${text}x`);
  });

  it('rejects lone surrogates, which have no UTF-8 form, and keeps pairs', () => {
    expect(codeOf(() => checkText('a\ud800b', 'title', 1, 200))).toBe('BAD_USER_INPUT');
    expect(codeOf(() => checkText('\udc00', 'body', 0, 200))).toBe('BAD_USER_INPUT');
    expect(checkText('\ud83d\ude00', 'title', 1, 200)).toBe('😀');
  });
});
