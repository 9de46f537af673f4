// Relay-style connection pages. Stores fetch `limit + 1` rows; the extra row only tells
// whether another page exists.
export interface Page<T> {
  edges: { readonly cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

// A cursor costs an encryption and a MAC: an edge and a page's end compute theirs only if the query asks for it
// (a feed page without `cursor` fields encodes one cursor, not one per post).
class Edge<R, T> {
  constructor(
    readonly node: T,
    private readonly row: R,
    private readonly cursorOf: (row: R) => string,
  ) {}

  get cursor(): string {
    return this.cursorOf(this.row);
  }
}

class PageInfo<R> {
  constructor(
    readonly hasNextPage: boolean,
    private readonly last: R | undefined,
    private readonly cursorOf: (row: R) => string,
  ) {}

  get endCursor(): string | null {
    return this.last === undefined ? null : this.cursorOf(this.last);
  }
}

export function toPage<T>(rows: readonly T[], limit: number, cursorOf: (node: T) => string): Page<T> {
  const kept = rows.slice(0, limit);
  return {
    edges: kept.map((node) => new Edge(node, node, cursorOf)),
    pageInfo: new PageInfo(rows.length > limit, kept.at(-1), cursorOf),
  };
}

/**
 * A page of a list whose store already left out what the viewer may not see, checked once
 * more on the loaded nodes (a node deleted or made private since the scan is null): such a
 * node is dropped and the cursor still moves past it, so the page never repeats.
 */
export function toFilteredPage<R, T>(
  scanned: readonly R[],
  limit: number,
  cursorOf: (row: R) => string,
  nodes: readonly (T | null)[],
): Page<T> {
  const rows = scanned.slice(0, limit);
  return {
    edges: rows.flatMap((row, i) => (nodes[i] ? [new Edge(nodes[i]!, row, cursorOf)] : [])),
    pageInfo: new PageInfo(scanned.length > limit, rows.at(-1), cursorOf),
  };
}
