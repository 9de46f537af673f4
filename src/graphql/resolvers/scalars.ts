import { GraphQLScalarType, Kind } from 'graphql';
import { badInput } from '../../errors.js';

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;

function parseInstant(value: unknown): Date {
  const date = typeof value === 'string' && ISO_INSTANT.test(value) ? new Date(value) : null;
  if (!date || Number.isNaN(date.getTime())) throw badInput('DateTime must be an ISO-8601 instant with a time zone');
  return date;
}

export const DateTime = new GraphQLScalarType<Date, string>({
  name: 'DateTime',
  serialize(value) {
    if (value instanceof Date) return value.toISOString();
    throw new TypeError(`DateTime cannot represent ${String(value)}`);
  },
  parseValue: parseInstant,
  parseLiteral(ast) {
    if (ast.kind !== Kind.STRING) throw badInput('DateTime must be a string');
    return parseInstant(ast.value);
  },
});
