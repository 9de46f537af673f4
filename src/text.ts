// Checks of free text a client sends (titles, bodies, idempotency keys): lengths in
// characters as a reader counts them, well-formed Unicode, not blank when required.
import { badInput } from './errors.js';

export const TITLE_MAX_CHARS = 200;
export const BODY_MAX_CHARS = 10_000;

/** Length in characters as a reader counts them (code points, not UTF-16 units). */
export const charCount = (text: string) => [...text].length;

// A lone surrogate (JSON allows "\ud800") has no UTF-8 form: it would be stored as U+FFFD.
const LONE_SURROGATE = /\p{Surrogate}/u;
// Blank to a reader: spaces of every kind and the invisible (zero-width spaces and joiners,
// byte order marks, fillers).
const BLANK = /^[\p{White_Space}\p{Default_Ignorable_Code_Point}\u2800]*$/u;

/** Checks a free-text argument: valid Unicode without NUL (PostgreSQL refuses it), length in characters, not blank when required. */
export function checkText(text: string, argumentName: string, min: number, max: number): string {
  if (text.includes('\u0000')) throw badInput(`${argumentName} must not contain NUL characters`, { argumentName });
  if (LONE_SURROGATE.test(text)) throw badInput(`${argumentName} must be valid Unicode (it has a lone surrogate)`, { argumentName });
  if (min > 0 && BLANK.test(text)) throw badInput(`${argumentName} must not be blank`, { argumentName });
  const n = charCount(text);
  if (n < min || n > max) {
    throw badInput(`${argumentName} must be ${min} to ${max} characters, got ${n}`, { argumentName });
  }
  return text;
}
