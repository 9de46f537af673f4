// Packed counters: an entity's counters as one binary string of uint32 slots, big-endian, at
// least COUNTER_SLOTS of them and ending at the last non-zero one; slots past the end read as
// 0, so a kind registered later needs no migration (lua/includes/packedCounters.lua writes them).
import { COUNTER_SLOTS, MAX_COUNTER_SLOTS } from '../domain/counters.js';

/** Whether `raw` is well-formed packed counters (a missing or malformed one is never read as zeros). */
export const isPackedCounters = (raw: Buffer | null): raw is Buffer =>
  raw !== null && raw.length % 4 === 0 && raw.length >= COUNTER_SLOTS * 4 && raw.length <= MAX_COUNTER_SLOTS * 4;

/** One counter of well-formed packed counters (see isPackedCounters). */
export const packedCounter = (raw: Buffer, slot: number) => (slot * 4 < raw.length ? raw.readUInt32BE(slot * 4) : 0);

/** Every stored counter (at least COUNTER_SLOTS), or null when the value is missing or malformed (never read as zeros). */
export function unpackCounters(raw: Buffer | null): number[] | null {
  if (!isPackedCounters(raw)) return null;
  return Array.from({ length: raw.length / 4 }, (_, slot) => raw.readUInt32BE(slot * 4));
}

export function packCounters(values: readonly number[]): Buffer {
  const width = Math.max(COUNTER_SLOTS, values.findLastIndex((v) => v !== 0) + 1);
  const buf = Buffer.alloc(width * 4);
  for (let slot = 0; slot < width; slot++) buf.writeUInt32BE(values[slot] ?? 0, slot * 4);
  return buf;
}
