// Relay-style connection pages. Stores fetch `limit + 1` rows; the extra row only tells
// whether another page exists.
export interface Page<T> {
  edges: { cursor: string; node: T }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
}

export function toPage<T>(rows: readonly T[], limit: number, cursorOf: (node: T) => string): Page<T> {
  const edges = rows.slice(0, limit).map((node) => ({ cursor: cursorOf(node), node }));
  return {
    edges,
    pageInfo: { hasNextPage: rows.length > limit, endCursor: edges.at(-1)?.cursor ?? null },
  };
}
