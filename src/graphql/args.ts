// Validation of client-supplied arguments. Every limit lives here and is enforced on the
// server whatever the client sends.
import { badInput } from '../errors.js';

export const MAX_PAGE_SIZE = 100;
export const MAX_IDS_PER_REQUEST = 100;
export const TITLE_MAX_CHARS = 200;
export const BODY_MAX_CHARS = 10_000;

const DECIMAL_ID = /^[1-9][0-9]{0,15}$/;

/** Parses a positive integer id below 2^53 given as a decimal string. */
export function parseId(raw: string, argumentName = 'id'): number {
  const value = DECIMAL_ID.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(value)) {
    throw badInput(`${argumentName} must be a positive integer id, got ${JSON.stringify(raw.slice(0, 40))}`, {
      argumentName,
    });
  }
  return value;
}

export function parseIds(raw: readonly string[], argumentName = 'ids'): number[] {
  if (raw.length > MAX_IDS_PER_REQUEST) {
    throw badInput(`${argumentName} accepts at most ${MAX_IDS_PER_REQUEST} ids, got ${raw.length}`, { argumentName });
  }
  return raw.map((id) => parseId(id, argumentName));
}

export function parsePageSize(first: number | null | undefined, argumentName = 'first'): number {
  const value = first ?? 20;
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE_SIZE) {
    throw badInput(`${argumentName} must be between 1 and ${MAX_PAGE_SIZE}, got ${value}`, { argumentName });
  }
  return value;
}

/** Length in characters as a reader counts them (code points, not UTF-16 units). */
const charCount = (text: string) => [...text].length;

/** Checks a free-text argument: length in characters, not blank when required, no NUL (PostgreSQL refuses it). */
export function checkText(text: string, argumentName: string, min: number, max: number): string {
  if (text.includes('\u0000')) throw badInput(`${argumentName} must not contain NUL characters`, { argumentName });
  if (min > 0 && text.trim() === '') throw badInput(`${argumentName} must not be blank`, { argumentName });
  const n = charCount(text);
  if (n < min || n > max) {
    throw badInput(`${argumentName} must be ${min} to ${max} characters, got ${n}`, { argumentName });
  }
  return text;
}
