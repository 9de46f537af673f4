// Executes operations with graphql-jit instead of graphql-js, behind Apollo. A feed page
// resolves hundreds of fields (thousands at 100 posts); graphql-js walks the document and the
// schema for each one on every request, graphql-jit compiles each document once into plain
// functions (measured: 30 % less CPU per 20-post page, docs/performance.md).
//
// Apollo has one documented seam for its executor: the gateway interface. This "gateway"
// serves our own schema and runs the compiled queries; parsing, validation (with the
// document limits), persisted queries, error formatting and the plugins stay Apollo's.
import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { GraphQLError, type GraphQLSchema, getVariableValues, printSchema, type SourceLocation } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import { ErrorCode } from '../errors.js';

/** Compiled operations kept; a client sends a handful of distinct documents, not thousands. */
const COMPILED_MAX = 1000;

/** graphql-js's own words for an operation it cannot pick (Apollo turns them into a 400). */
function unresolvedOperation(name: string | undefined): GraphQLError {
  return new GraphQLError(
    name ? `Unknown operation named "${name}".` : 'Must provide operation name if query contains multiple operations.',
  );
}

/**
 * graphql-jit's errors are frozen look-alikes whose `extensions` is undefined unless the
 * resolver's error had some: Apollo's error handling (and any plugin) reads and writes them as
 * graphql-js errors, and failed on them (a resolver's plain Error became an unlogged 500).
 * Errors leave the executor as real graphql-js errors, as graphql-js would make them.
 */
function asGraphQLJsError(error: GraphQLError): GraphQLError {
  const copy = new GraphQLError(error.message, {
    path: error.path,
    originalError: error.originalError ?? undefined,
    extensions: error.extensions,
  });
  // graphql-jit gives positions as locations only, already resolved against the document.
  (copy as { locations?: readonly SourceLocation[] }).locations = error.locations;
  return copy;
}

export function jitGateway(schema: GraphQLSchema): GatewayInterface {
  const compiled = new LRUCache<string, CompiledQuery>({ max: COMPILED_MAX });

  const executor: GatewayExecutor = async (request) => {
    // Apollo leaves execution to report an operationName that names no operation (graphql-js
    // does); compileQuery would fall back to the document's only operation and run it.
    if (!request.operation) return { errors: [unresolvedOperation(request.request.operationName)] };
    // queryHash is the document's SHA-256: with the operation name it names one compiled plan.
    const key = `${request.queryHash}:${request.operationName ?? ''}`;
    let query = compiled.get(key);
    if (!query) {
      const result = compileQuery(schema, request.document, request.operationName ?? undefined, {
        // A resolver's error carries its own stack; the executor's wrapper needs none.
        disablingCapturingStackErrors: true,
      });
      if (!isCompiledQuery(result)) return result;
      query = result;
      compiled.set(key, query);
    }
    const variables = request.request.variables ?? {};
    const result = await query.query(undefined, request.context, variables);
    // No data at all: the variables did not coerce, and execution never started. Such errors
    // come from graphql-js itself, so clients get its messages and locations, and Apollo
    // recognises them as bad input (its code, HTTP 400): graphql-jit's own carry neither.
    if (result.data === undefined && result.errors) {
      const coerced = getVariableValues(schema, request.operation.variableDefinitions ?? [], variables);
      const code = ErrorCode.BAD_USER_INPUT;
      return { errors: coerced.errors ?? result.errors.map((e) => new GraphQLError(e.message, { extensions: { code } })) };
    }
    if (result.errors) return { ...result, errors: result.errors.map(asGraphQLJsError) };
    return result;
  };

  return {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: printSchema(schema) });
      return () => {};
    },
    load: async () => ({ executor }),
    stop: async () => {},
  };
}
