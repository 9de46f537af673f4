// Outbox stream entries <-> CounterEvent. Field names are one letter: the outbox holds
// every change of a hot post, so bytes per entry matter (written by lua/setRelation-6.lua).
import { TYPES } from '../domain/kinds.js';
import type { CounterEvent } from './types.js';

const POSITIVE_INT = /^[1-9][0-9]*$/;

/** Decodes one stream entry's flat [field, value, ...] list; null for an entry Tally did not write. */
export function decodeOutboxEntry(id: string, partition: number, fields: string[]): CounterEvent | null {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  const { e, i: entityId, m, x, u, a, d } = f;
  if (!e || !TYPES.has(e) || !m || !entityId || !u || !a || !POSITIVE_INT.test(entityId) || !POSITIVE_INT.test(u)) return null;
  if (x === undefined || !/^([0-9]|[1-5][0-9]|6[0-3])?$/.test(x) || (d !== '1' && d !== '-1') || !/^[0-9]+$/.test(a)) return null;
  return {
    id,
    partition,
    entityType: e,
    entityId: Number(entityId),
    relation: m,
    slot: x === '' ? null : Number(x),
    userId: Number(u),
    authorId: Number(a),
    delta: d === '1' ? 1 : -1,
    ts: Number(id.split('-')[0]),
  };
}
