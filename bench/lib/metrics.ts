// Tally's own /metrics (Prometheus text): gauges and counters summed over their labels, histogram percentiles.

export async function metricsText(url: string): Promise<string | null> {
  try {
    const res = await fetch(`${url}/metrics`, { signal: AbortSignal.timeout(30_000) });
    return res.ok ? await res.text() : null;
  } catch {
    return null;
  }
}

/** A gauge or counter summed over its labels (0 when absent; NaN without metrics). */
export function metric(text: string | null, name: string): number {
  if (text === null) return Number.NaN;
  let sum = 0;
  for (const match of text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'gm'))) sum += Number(match[1]);
  return sum;
}

export function histogram(text: string | null, name: string): Map<number, number> {
  const buckets = new Map<number, number>();
  for (const match of (text ?? '').matchAll(new RegExp(`^${name}_bucket\\{le="([^"]+)"\\} (\\S+)$`, 'gm'))) {
    buckets.set(match[1] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[1]), Number(match[2]));
  }
  return buckets;
}

/** The bucket bound (ms) below which `p` % of the observations between two readings fall; null past the last bound. */
export function bucketPercentile(before: Map<number, number>, after: Map<number, number>, p: number): number | null {
  const total = (after.get(Number.POSITIVE_INFINITY) ?? 0) - (before.get(Number.POSITIVE_INFINITY) ?? 0);
  if (total <= 0) return null;
  for (const bound of [...after.keys()].sort((a, b) => a - b)) {
    if ((after.get(bound) ?? 0) - (before.get(bound) ?? 0) >= (p / 100) * total) return Number.isFinite(bound) ? bound * 1000 : null;
  }
  return null;
}
