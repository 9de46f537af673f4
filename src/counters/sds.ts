// SDS: an entity's counters as one fixed-width binary string of uint32 slots, big-endian
// (see lua/includes/sds.lua, which writes them; the slots are in src/domain/counters.ts).
import { SDS_SLOTS } from '../domain/counters.js';

export const SDS_BYTES = SDS_SLOTS * 4;

/** Whether `raw` is a well-formed SDS (a missing or malformed one is never read as zeros). */
export const isSds = (raw: Buffer | null): raw is Buffer => raw !== null && raw.length === SDS_BYTES;

/** One counter of a well-formed SDS (see isSds). */
export const sdsField = (raw: Buffer, field: number) => raw.readUInt32BE(field * 4);

/** The five counters, or null when the value is missing or malformed (never read as zeros). */
export function decodeSds(raw: Buffer | null): number[] | null {
  if (!raw || raw.length !== SDS_BYTES) return null;
  return Array.from({ length: SDS_SLOTS }, (_, i) => raw.readUInt32BE(i * 4));
}

export function encodeSds(values: readonly number[]): Buffer {
  const buf = Buffer.alloc(SDS_BYTES);
  values.forEach((v, i) => {
    buf.writeUInt32BE(v, i * 4);
  });
  return buf;
}
