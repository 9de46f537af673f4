// SDS: an entity's counters as one fixed-width binary string, 5 fields x uint32
// big-endian (see lua/includes/sds.lua, which writes them).
export const SDS_FIELDS = 5;
export const SDS_BYTES = SDS_FIELDS * 4;

export const SdsField = { read: 0, like: 1, fav: 2, comment: 3, repost: 4 } as const;

/** Whether `raw` is a well-formed SDS (a missing or malformed one is never read as zeros). */
export const isSds = (raw: Buffer | null): raw is Buffer => raw !== null && raw.length === SDS_BYTES;

/** One counter of a well-formed SDS (see isSds). */
export const sdsField = (raw: Buffer, field: number) => raw.readUInt32BE(field * 4);

/** The five counters, or null when the value is missing or malformed (never read as zeros). */
export function decodeSds(raw: Buffer | null): number[] | null {
  if (!raw || raw.length !== SDS_BYTES) return null;
  return Array.from({ length: SDS_FIELDS }, (_, i) => raw.readUInt32BE(i * 4));
}

export function encodeSds(values: readonly number[]): Buffer {
  const buf = Buffer.alloc(SDS_BYTES);
  values.forEach((v, i) => {
    buf.writeUInt32BE(v, i * 4);
  });
  return buf;
}
