// A fact's version is the outbox id of the event that set it ("<ms>-<seq>"), packed into one
// BIGINT so PostgreSQL compares versions with a plain `<`. Every event of one (user, entity)
// pair sits in the entity's partition stream, so their ids are totally ordered.
const SEQ_BITS = 22n;

export function packVersion(eventId: string): bigint {
  const [ms, seq] = eventId.split('-');
  const sequence = BigInt(seq ?? '0');
  if (sequence >= 1n << SEQ_BITS) throw new RangeError(`event id ${eventId} has a sequence beyond ${SEQ_BITS} bits`);
  return (BigInt(ms ?? '0') << SEQ_BITS) | sequence;
}

export function unpackVersion(version: bigint): string {
  return `${version >> SEQ_BITS}-${version & ((1n << SEQ_BITS) - 1n)}`;
}
