// The caches of what clients sent, bounded by the heap they really hold: Apollo's parsed and
// validated documents, and graphql-jit's compiled plans (src/graphql/jitExecutor.ts).
// Apollo's default document store sizes an entry as its AST's JSON, which leaves out the
// document's source: every AST node's `loc` keeps the whole source text alive, comments
// included (a 900 KB comment around `{ __typename }` counted as 448 bytes). Measured on
// Node 24: a parsed document holds 3.3 to 4 times its JSON on the heap (docs/performance.md,
// "Memory per client").
import type { KeyValueCache } from '@apollo/utils.keyvaluecache';
import type { DocumentNode, GraphQLSchema } from 'graphql';
import { LRUCache } from 'lru-cache';
import type { Config } from '../config.js';
import { jitGateway } from './jitExecutor.js';

/** Heap bytes per byte of an AST's JSON (measured 3.3 to 4; the upper end, to be safe). */
const HEAP_PER_JSON_BYTE = 4;

/** What a parsed document holds: its source text (kept by `loc`), and its AST. */
export function documentBytes(document: DocumentNode): number {
  const source = document.loc?.source.body ?? '';
  return Buffer.byteLength(source) + HEAP_PER_JSON_BYTE * Buffer.byteLength(JSON.stringify(document));
}

export function createDocumentCaches(schema: GraphQLSchema, config: Pick<Config, 'documentCaches' | 'executor'>) {
  const { parsedBytes, compiledBytes, compileAfter } = config.documentCaches;
  const parsed = new LRUCache<string, DocumentNode>({ maxSize: parsedBytes, sizeCalculation: documentBytes });
  // Apollo's KeyValueCache over our own LRU, whose size we can read (InMemoryLRUCache hides it).
  const documentStore: KeyValueCache<DocumentNode> = {
    get: async (key) => parsed.get(key),
    set: async (key, document) => void parsed.set(key, document),
    delete: async (key) => parsed.delete(key),
  };
  const jit = config.executor === 'jit' ? jitGateway(schema, { maxBytes: compiledBytes, compileAfter }) : null;
  return {
    documentStore,
    /** The executor, when it is graphql-jit (else Apollo runs graphql-js on the schema). */
    jit,
    /** Estimated heap each cache holds now. */
    bytes: () => ({ parsed: parsed.calculatedSize, compiled: jit?.compiled().bytes ?? 0 }),
  };
}

export type DocumentCaches = ReturnType<typeof createDocumentCaches>;
