// Packed counters: an entity's counters as one fixed-width binary string of uint32 slots, big-endian
// (see lua/includes/packedCounters.lua, which writes them; the slots are in src/domain/counters.ts).
import { COUNTER_SLOTS } from '../domain/counters.js';

export const PACKED_BYTES = COUNTER_SLOTS * 4;

/** Whether `raw` is well-formed packed counters (a missing or malformed one is never read as zeros). */
export const isPackedCounters = (raw: Buffer | null): raw is Buffer => raw !== null && raw.length === PACKED_BYTES;

/** One counter of well-formed packed counters (see isPackedCounters). */
export const packedCounter = (raw: Buffer, field: number) => raw.readUInt32BE(field * 4);

/** The five counters, or null when the value is missing or malformed (never read as zeros). */
export function unpackCounters(raw: Buffer | null): number[] | null {
  if (!raw || raw.length !== PACKED_BYTES) return null;
  return Array.from({ length: COUNTER_SLOTS }, (_, i) => raw.readUInt32BE(i * 4));
}

export function packCounters(values: readonly number[]): Buffer {
  const buf = Buffer.alloc(PACKED_BYTES);
  values.forEach((v, i) => {
    buf.writeUInt32BE(v, i * 4);
  });
  return buf;
}
