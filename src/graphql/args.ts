// Validation of client-supplied arguments. Every limit lives here and is enforced on the
// server whatever the client sends.
import { badInput } from '../errors.js';

export const MAX_PAGE_SIZE = 100;
export const MAX_IDS_PER_REQUEST = 100;

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

/** 1 to `max` ids (of any kind: an owner's ids too); none would do nothing, so it is an error too. */
export function oneToMax<T>(raw: readonly T[], argumentName: string, max: number): readonly T[] {
  if (raw.length === 0 || raw.length > max) {
    throw badInput(`${argumentName} takes 1 to ${max} ids, got ${raw.length}`, { argumentName });
  }
  return raw;
}

/** 1 to `max` post or user ids to watch (subscriptions) or record views of. */
export function parseWatchedIds(raw: readonly string[], argumentName: string, max: number): number[] {
  return oneToMax(raw, argumentName, max).map((id) => parseId(id, argumentName));
}

export function parsePageSize(first: number | null | undefined, argumentName = 'first'): number {
  const value = first ?? 20;
  if (!Number.isInteger(value) || value < 1 || value > MAX_PAGE_SIZE) {
    throw badInput(`${argumentName} must be between 1 and ${MAX_PAGE_SIZE}, got ${value}`, { argumentName });
  }
  return value;
}
