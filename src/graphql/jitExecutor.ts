// Executes operations with graphql-jit instead of graphql-js, behind Apollo. A feed page
// resolves thousands of fields; graphql-js walks the document and the schema for each one
// on every request, graphql-jit compiles each document once into a plain function.
//
// Apollo has one documented seam for its executor: the gateway interface. This "gateway"
// serves our own schema and runs the compiled queries; parsing, validation (with the
// document limits), persisted queries, error formatting and the plugins stay Apollo's.
import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { GraphQLError, type GraphQLSchema, printSchema } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import { ErrorCode } from '../errors.js';

/** Compiled operations kept; a client sends a handful of distinct documents, not thousands. */
const COMPILED_MAX = 1000;

export function jitGateway(schema: GraphQLSchema): GatewayInterface {
  const compiled = new LRUCache<string, CompiledQuery>({ max: COMPILED_MAX });

  const executor: GatewayExecutor = async (request) => {
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
    const result = await query.query(undefined, request.context, request.request.variables ?? {});
    // No data at all: the variables did not coerce, and execution never started. graphql-js
    // errors carry the variable's AST node, from which Apollo recognises bad input; graphql-jit's
    // carry only its location, so say it ourselves.
    if (result.data === undefined && result.errors) {
      const code = ErrorCode.BAD_USER_INPUT;
      return { errors: result.errors.map((e) => new GraphQLError(e.message, { source: e.source, positions: e.positions, extensions: { code } })) };
    }
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
