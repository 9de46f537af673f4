// The query cost is remembered per (document, variables), within a bound of its own: clients
// choose both, so what is remembered must not grow with them (docs/design.md, "Budgets and bounded stores").
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { type DocumentNode, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { operationCost } from '../../src/graphql/cost.js';
import { createSchema } from '../../src/graphql/schema.js';

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const schema = createSchema();
const costOf = (document: DocumentNode, variables: Record<string, unknown>) =>
  operationCost(schema, { document, operation: getOperationAST(document)!, variables });
const page = (i: number) => parse(`query Q${i}($n: Int, $pad: String) { feed(first: $n) { edges { cursor node { id } } } }`);

describe('operationCost', () => {
  it('answers each (document, variables) its own cost, remembered or not', () => {
    const document = page(0);
    const [ten, fifty] = [costOf(document, { n: 10 }), costOf(document, { n: 50 })];
    expect(fifty).toBeGreaterThan(ten!);
    expect([costOf(document, { n: 10 }), costOf(document, { n: 50 }), costOf(page(1), { n: 10 })]).toEqual([ten, fifty, ten]);
  });

  it('remembers within a bounded heap, however many documents and variables clients send', () => {
    // 2,000 small documents, each with 64 sets of variables of ~420 characters: remembered per
    // document, they held ~64 MiB.
    const documents = Array.from({ length: 2000 }, (_, i) => page(i));
    costOf(documents[0]!, { n: 1 });
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let round = 0; round < 64; round++) {
      for (const document of documents) costOf(document, { n: 5, pad: `${round} ${'x'.repeat(200)} ${Math.random()}` });
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    expect(documents).toHaveLength(2000); // held until here, as a server's document cache holds them
    expect(grown).toBeLessThan(8 * 1024 * 1024);
  });
});
