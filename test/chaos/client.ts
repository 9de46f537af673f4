// GraphQL over HTTP as a mobile client sees it: every outcome is classified, so the workload
// knows what to retry and the report can count client errors by code.

export type Outcome<T> =
  | { ok: true; data: T }
  /** `code`: a GraphQL error code, or `network`, `timeout`, `http-<status>`. */
  | { ok: false; code: string; retryable: boolean; retryAfterMs?: number; message: string };

const RETRYABLE_CODES = new Set(['INTERNAL_SERVER_ERROR', 'RATE_LIMITED']);

/** POSTs one operation; `field`: the root field whose value is the result (null = failed). */
export async function gql<T>(
  url: string,
  query: string,
  variables: Record<string, unknown>,
  options: { token?: string; timeoutMs?: number; field?: string } = {},
): Promise<Outcome<T>> {
  let res: Response;
  let text: string;
  try {
    res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(options.token && { authorization: `Bearer ${options.token}` }) },
      body: JSON.stringify({ query, variables }),
      signal: AbortSignal.timeout(options.timeoutMs ?? 15_000),
    });
    text = await res.text();
  } catch (error) {
    const name = (error as Error).name;
    const timeout = name === 'TimeoutError' || name === 'AbortError';
    return { ok: false, code: timeout ? 'timeout' : 'network', retryable: true, message: String((error as Error).cause ?? error) };
  }
  let body: {
    data?: Record<string, unknown> | null;
    errors?: { message: string; extensions?: { code?: string; retryAfterMs?: number } }[];
  };
  try {
    body = JSON.parse(text);
  } catch {
    return { ok: false, code: `http-${res.status}`, retryable: res.status >= 500, message: text.slice(0, 200) };
  }
  const error = body.errors?.[0];
  const value = options.field ? body.data?.[options.field] : body.data;
  if (value !== null && value !== undefined && !error) return { ok: true, data: value as T };
  if (res.status >= 500 && !error?.extensions?.code) {
    return { ok: false, code: `http-${res.status}`, retryable: true, message: error?.message ?? text.slice(0, 200) };
  }
  const code = error?.extensions?.code ?? `http-${res.status}`;
  return {
    ok: false,
    code,
    retryable: RETRYABLE_CODES.has(code) || res.status >= 500,
    ...(typeof error?.extensions?.retryAfterMs === 'number' && { retryAfterMs: error.extensions.retryAfterMs }),
    message: error?.message ?? 'no data',
  };
}
