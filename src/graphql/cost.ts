// What an operation costs to run, computed once its variables are known: a list's size is the
// `first` it will really run with (a literal, a variable or the schema's default) and the
// number of `ids` (or a gateway's representations) asked, so `feed(first: $n)` with n = 100 costs what `feed(first: 100)`
// does. graphql-query-complexity walks the operation (fragments, @skip and @include with
// variables); the estimator keeps the static rule's formula, so MAX_QUERY_COST means what it
// did: a scalar costs 1, an object 2 plus 1.5 times its selection, times its list size.
import {
  type DocumentNode,
  type GraphQLSchema,
  getNamedType,
  getVariableValues,
  isCompositeType,
  type OperationDefinitionNode,
} from 'graphql';
import { type ComplexityEstimator, getComplexity } from 'graphql-query-complexity';
import { LRUCache } from 'lru-cache';

const SCALAR_COST = 1;
const OBJECT_COST = 2;
const DEPTH_FACTOR = 1.5;

/** How many items a list field returns at most, from its arguments (1 for anything else). */
function listSize(args: Record<string, unknown>): number {
  if (typeof args.first === 'number') return Math.max(1, args.first);
  if (Array.isArray(args.ids)) return Math.max(1, args.ids.length);
  // A gateway's `_entities` batch: one entity per representation.
  if (Array.isArray(args.representations)) return Math.max(1, args.representations.length);
  return 1;
}

const estimator: ComplexityEstimator = ({ field, args, childComplexity }) => {
  // Introspection is answered from the schema in memory (and refused in production).
  if (field.name.startsWith('__')) return 0;
  if (!isCompositeType(getNamedType(field.type))) return SCALAR_COST;
  return (OBJECT_COST + DEPTH_FACTOR * childComplexity) * listSize(args);
};

export interface CostedRequest {
  document: DocumentNode;
  operation: OperationDefinitionNode;
  variables: Record<string, unknown> | undefined;
}

// Costing a feed page was about 5 % of its server CPU (a walk of the whole document per
// request), and clients send the same few (document, variables) again and again, so costs are
// remembered. In one LRU per schema bounded by the bytes of its keys, not per document: a
// client that sends many small documents with many variables would otherwise grow it past
// what DOCUMENT_CACHE_BYTES allows the documents themselves.
const MEMO_BYTES = 1024 * 1024;
const MEMO_KEY_CHARS = 512;
const memos = new WeakMap<GraphQLSchema, LRUCache<string, { cost: number | null }>>();
// A document's place in a key: Apollo parses a query text once, so its documents are the same
// object request after request (a document that is let go takes its id with it).
const documentIds = new WeakMap<DocumentNode, number>();
let documentCount = 0;

/**
 * The operation's cost with its variables; null when its variables do not coerce (it will not
 * execute: execution reports them in graphql-js's words); Infinity when it cannot be costed
 * (more than 10,000 fields once fragments are spread).
 */
export function operationCost(schema: GraphQLSchema, request: CostedRequest): number | null {
  const variables = JSON.stringify(request.variables ?? {});
  if (variables.length > MEMO_KEY_CHARS) return costOf(schema, request);
  let id = documentIds.get(request.document);
  if (id === undefined) {
    id = ++documentCount;
    documentIds.set(request.document, id);
  }
  const key = `${id} ${request.operation.name?.value ?? ''} ${variables}`;
  const memo = memoOf(schema);
  const known = memo.get(key);
  if (known) return known.cost;
  const cost = costOf(schema, request);
  memo.set(key, { cost });
  return cost;
}

function memoOf(schema: GraphQLSchema) {
  let memo = memos.get(schema);
  if (!memo) {
    // A key's string (two bytes a character at most) and its entry.
    memo = new LRUCache({ maxSize: MEMO_BYTES, sizeCalculation: (_, key) => 2 * key.length + 100 });
    memos.set(schema, memo);
  }
  return memo;
}

function costOf(schema: GraphQLSchema, request: CostedRequest): number | null {
  const variables = request.variables ?? {};
  if (getVariableValues(schema, request.operation.variableDefinitions ?? [], variables).errors) return null;
  try {
    return getComplexity({
      schema,
      query: request.document,
      operationName: request.operation.name?.value,
      variables,
      estimators: [estimator],
    });
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}
