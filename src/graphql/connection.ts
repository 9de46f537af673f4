// Relay-style connection pages. Stores fetch `limit + 1` rows; the extra row only tells
// whether another page exists.
export interface Page<T> {
  edges: { readonly cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

/** An edge whose cursor (an HMAC) is computed only if the query asks for it. */
function edge<R, T>(row: R, node: T, cursorOf: (row: R) => string) {
  return {
    node,
    get cursor() {
      return cursorOf(row);
    },
  };
}

export function toPage<T>(rows: readonly T[], limit: number, cursorOf: (node: T) => string): Page<T> {
  const edges = rows.slice(0, limit).map((node) => edge(node, node, cursorOf));
  return {
    edges,
    pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
  };
}

/**
 * A page of a list whose scanned rows may be left out (deleted posts, private likes): the
 * store scans `limit + 1` rows, `keep` drops some, and the cursor still moves past every
 * scanned row, so a page whose rows were all dropped advances instead of repeating.
 */
export function toFilteredPage<R, T>(
  scanned: readonly R[],
  limit: number,
  cursorOf: (row: R) => string,
  nodes: readonly (T | null)[],
): Page<T> {
  const rows = scanned.slice(0, limit);
  const edges = rows.flatMap((row, i) => (nodes[i] ? [edge(row, nodes[i]!, cursorOf)] : []));
  return {
    edges,
    pageInfo: { hasNextPage: scanned.length > limit, endCursor: rows.length > 0 ? cursorOf(rows.at(-1)!) : null },
  };
}
