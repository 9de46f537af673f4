// GraphiQL's docs panel is the API reference clients read: every part of the schema a client
// can see must say what it is, its limits and its errors.
import { readFileSync } from 'node:fs';
import {
  buildSchema,
  type GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isIntrospectionType,
  isObjectType,
  isSpecifiedScalarType,
} from 'graphql';
import { describe, expect, it } from 'vitest';
import { projectPath } from '../../src/paths.js';

const documented = (description: string | null | undefined) => (description ?? '').trim() !== '';

/** Schema coordinates (`Type`, `Type.field`, `Type.field(arg)`, `Enum.VALUE`) that have no description. */
function undocumented(schema: GraphQLSchema): string[] {
  const missing: string[] = [];
  if (!documented(schema.description)) missing.push('schema');
  for (const type of Object.values(schema.getTypeMap())) {
    // Built-ins (String, Int, __Schema, …) are graphql-js's to document, not ours.
    if (isIntrospectionType(type) || isSpecifiedScalarType(type)) continue;
    if (!documented(type.description)) missing.push(type.name);
    if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        const coordinate = `${type.name}.${field.name}`;
        if (!documented(field.description)) missing.push(coordinate);
        for (const arg of 'args' in field ? field.args : []) {
          if (!documented(arg.description)) missing.push(`${coordinate}(${arg.name})`);
        }
      }
    }
    if (isEnumType(type)) {
      for (const value of type.getValues()) {
        if (!documented(value.description)) missing.push(`${type.name}.${value.name}`);
      }
    }
  }
  return missing;
}

describe('schema.graphql documentation', () => {
  it('describes the schema, every type, field, argument, input field and enum value', () => {
    const schema = buildSchema(readFileSync(projectPath('schema.graphql'), 'utf8'));
    expect(undocumented(schema)).toEqual([]);
  });

  it('reports what is missing by its schema coordinate', () => {
    // Guards the walk itself: an empty list above must mean "all documented", not "nothing seen".
    const schema = buildSchema(`
      "q" type Query { "f" f(a: Int, "b" b: E): T }
      type T { x: Int }
      "e" enum E { ONE, "two" TWO }
      "i" input I { y: Int }
    `);
    expect(undocumented(schema)).toEqual(['schema', 'Query.f(a)', 'T', 'T.x', 'E.ONE', 'I.y']);
  });
});
