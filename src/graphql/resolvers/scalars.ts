import { GraphQLScalarType, Kind } from 'graphql';
import { badInput } from '../../errors.js';

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

function parseInstant(value: unknown): Date {
  const date = typeof value === 'string' && ISO_INSTANT.test(value) ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) throw badInput('DateTime must be an ISO-8601 instant with a time zone');
  return date;
}

// A feed page's posts come from the feed cache for a second, Date objects and all: their
// ISO strings are computed once, not once per request (toISOString is a few % of a feed).
const isoStrings = new WeakMap<Date, string>();

export const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize(value) {
    if (!(value instanceof Date)) throw new TypeError(`DateTime cannot represent ${String(value)}`);
    let iso = isoStrings.get(value);
    if (iso === undefined) {
      iso = value.toISOString();
      isoStrings.set(value, iso);
    }
    return iso;
  },
  parseValue: parseInstant,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw badInput('DateTime must be a string');
    return parseInstant(ast.value);
  },
});
