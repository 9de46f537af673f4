// Relation bitmaps are sharded in chunks of 32,768 user ids (4 KiB when full), so one
// sparse id does not allocate a bitmap as large as the id space.
export const CHUNK_BITS = 32_768;

export const chunkOf = (userId: number) => Math.floor(userId / CHUNK_BITS);
export const bitOf = (userId: number) => userId % CHUNK_BITS;
