import { GraphQLError } from 'graphql';
import { describe, expect, it } from 'vitest';
import { formatError, notFound } from '../../src/errors.js';

const format = (error: GraphQLError, exposeDetails = false) => formatError(error.toJSON(), error, { exposeDetails });

describe('formatError', () => {
  it('keeps our own codes and extensions', () => {
    expect(format(notFound('post 3 not found'))).toEqual({
      message: 'post 3 not found',
      extensions: { code: 'NOT_FOUND' },
    });
  });

  it('folds parse and validation failures into BAD_USER_INPUT', () => {
    const error = new GraphQLError('Syntax Error', { extensions: { code: 'GRAPHQL_PARSE_FAILED' } });
    expect(format(error).extensions?.code).toBe('BAD_USER_INPUT');
  });

  it('hides unknown errors behind INTERNAL_SERVER_ERROR in production', () => {
    const error = new GraphQLError('connect ECONNREFUSED 10.0.0.3:5432', {
      extensions: { code: 'SOMETHING_ELSE', stacktrace: ['at secret.js:1'] },
    });
    expect(format(error)).toEqual({ message: 'internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  });

  it('shows the message of unknown errors outside production', () => {
    const error = new GraphQLError('boom', { extensions: { code: 'SOMETHING_ELSE' } });
    expect(format(error, true)).toMatchObject({ message: 'boom', extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  });

  it('lets the persisted-query protocol code through (clients resend the query on it)', () => {
    const error = new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } });
    expect(format(error).extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  });

  it("treats Apollo's code-less 4xx errors (the APQ protocol's) as bad input, not internal", () => {
    const error = new GraphQLError('provided sha does not match query', { extensions: { http: { status: 400 } } });
    expect(format(error)).toMatchObject({
      message: 'provided sha does not match query',
      extensions: { code: 'BAD_USER_INPUT' },
    });
  });

  it('drops "Did you mean …?" in production, and keeps it outside', () => {
    const error = new GraphQLError('Value "FAVV" does not exist in "RelationKind" enum. Did you mean the enum value "FAV"?', {
      extensions: { code: 'BAD_USER_INPUT' },
    });
    expect(format(error).message).toBe('Value "FAVV" does not exist in "RelationKind" enum.');
    expect(format(error, true).message).toMatch(/Did you mean the enum value "FAV"\?$/);
    const field = new GraphQLError('Cannot query field "feedd" on type "Query". Did you mean "feed" or "post"?', {
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
    expect(format(field)).toEqual({ message: 'Cannot query field "feedd" on type "Query".', extensions: { code: 'BAD_USER_INPUT' } });
  });
});
