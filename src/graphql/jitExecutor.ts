// Executes operations with graphql-jit instead of graphql-js, behind Apollo. A feed page
// resolves hundreds of fields (thousands at 100 posts); graphql-js walks the document and the
// schema for each one on every request, graphql-jit compiles each document once into plain
// functions (measured: 30 % less CPU per 20-post page, docs/performance.md).
//
// Apollo has one documented seam for its executor: the gateway interface. This "gateway"
// serves our own schema and runs the compiled queries; parsing, validation (with the
// document limits), persisted queries, error formatting and the plugins stay Apollo's.
//
// Anyone may send a new document, and a compiled one is large (a 40-alias feed document holds
// ~0.65 MB), so the compiled plans are bounded by the heap they hold, and a document is
// compiled only once it ran a few times (JIT_COMPILE_AFTER, 2 by default, as Mercurius
// does): one-off documents, a scanner's or an attacker's, run on graphql-js and cost no
// compilation.
import type { GatewayExecutor, GatewayInterface } from '@apollo/server-gateway-interface';
import { execute, GraphQLError, type GraphQLSchema, getVariableValues, printSchema, type SourceLocation } from 'graphql';
import { type CompiledQuery, compileQuery, isCompiledQuery } from 'graphql-jit';
import { LRUCache } from 'lru-cache';
import { ErrorCode } from '../errors.js';

/**
 * Heap a compiled plan holds: a fixed part plus about 0.65 bytes per character of its
 * generated code, measured on Node 24 after execution (docs/performance.md, "Memory per
 * client"); rounded up to 64 KiB + 1 byte per character.
 */
const compiledBytes = (generatedCode: string) => 64 * 1024 + generatedCode.length;

/** Documents remembered as seen but not yet compiled (a hash and a count each). */
const SEEN_MAX = 10_000;

/** graphql-jit keeps the generated code on the plan only in debug mode: its length sizes the plan. */
const GENERATED_CODE = '__DO_NOT_USE_THIS_OR_YOU_WILL_BE_FIRED_compilation';

interface Plan {
  query: CompiledQuery;
  bytes: number;
}

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

/** Compiles the operation, or returns graphql-js's errors for it. */
function compile(schema: GraphQLSchema, request: Parameters<GatewayExecutor>[0]) {
  const result = compileQuery(schema, request.document, request.operationName ?? undefined, {
    // A resolver's error carries its own stack; the executor's wrapper needs none.
    disablingCapturingStackErrors: true,
    debug: true,
  } as Parameters<typeof compileQuery>[3]);
  if (!isCompiledQuery(result)) return result;
  const generated = result as CompiledQuery & { [GENERATED_CODE]?: string };
  const bytes = compiledBytes(generated[GENERATED_CODE] ?? '');
  delete generated[GENERATED_CODE];
  return { query: result, bytes };
}

export interface JitOptions {
  /** Heap the compiled plans may hold (estimated by compiledBytes). */
  maxBytes: number;
  /** Runs of a document on graphql-js before it is compiled (1: compile at once). */
  compileAfter: number;
}

export function jitGateway(schema: GraphQLSchema, options: JitOptions) {
  const compiled = new LRUCache<string, Plan>({ maxSize: options.maxBytes, sizeCalculation: (plan) => plan.bytes });
  const seen = new LRUCache<string, number>({ max: SEEN_MAX });

  const executor: GatewayExecutor = async (request) => {
    // Apollo leaves execution to report an operationName that names no operation (graphql-js
    // does); compileQuery would fall back to the document's only operation and run it.
    if (!request.operation) return { errors: [unresolvedOperation(request.request.operationName)] };
    // queryHash is the document's SHA-256: with the operation name it names one compiled plan.
    const key = `${request.queryHash}:${request.operationName ?? ''}`;
    const variables = request.request.variables ?? {};
    let plan = compiled.get(key);
    if (!plan) {
      const runs = seen.get(key) ?? 0;
      if (runs + 1 < options.compileAfter) {
        seen.set(key, runs + 1);
        return execute({
          schema,
          document: request.document,
          operationName: request.operationName,
          variableValues: variables,
          contextValue: request.context,
        });
      }
      const result = compile(schema, request);
      if (!('query' in result)) return result;
      plan = result;
      seen.delete(key);
      compiled.set(key, plan);
    }
    const result = await plan.query.query(undefined, request.context, variables);
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

  const gateway: GatewayInterface = {
    onSchemaLoadOrUpdate(callback) {
      callback({ apiSchema: schema, coreSupergraphSdl: printSchema(schema) });
      return () => {};
    },
    load: async () => ({ executor }),
    stop: async () => {},
  };
  return {
    gateway,
    /** The compiled plans held now, and the heap they are estimated to hold. */
    compiled: () => ({ plans: compiled.size, bytes: compiled.calculatedSize }),
  };
}

export type JitGateway = ReturnType<typeof jitGateway>;
