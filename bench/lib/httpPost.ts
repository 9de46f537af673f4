// The bench's own HTTP client: one JSON POST, and GraphQL over it.
import http from 'node:http';

export interface PostOptions {
  agent?: http.Agent;
  token?: string | undefined;
  timeoutMs?: number;
  /** Holds the request until it settles, so a caller can abandon the ones still open. */
  track?: Set<http.ClientRequest>;
}

/** Resolves with the answer's status and text; rejects when the connection fails first. */
export function httpPost(url: string, body: string, options: PostOptions = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error: Error | null, answer?: { status: number; text: string }) => {
      if (settled) return;
      settled = true;
      options.track?.delete(req);
      if (error) reject(error);
      else resolve(answer!);
    };
    const headers: http.OutgoingHttpHeaders = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
    if (options.token) headers.authorization = `Bearer ${options.token}`;
    const req = http.request(url, { method: 'POST', agent: options.agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => settle(null, { status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', settle);
    });
    req.on('error', settle);
    req.on('close', () => settle(new Error('connection closed before the answer')));
    if (options.timeoutMs) req.setTimeout(options.timeoutMs, () => req.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
    options.track?.add(req);
    req.end(body);
  });
}

/** A GraphQL request's data and text; throws unless the answer is HTTP 200 with data and no errors. */
export async function postGraphQL<T = any>(url: string, body: string, options: PostOptions = {}) {
  const { status, text } = await httpPost(`${url}/graphql`, body, options);
  const json = JSON.parse(text) as { data?: T; errors?: unknown };
  if (status !== 200 || json.errors || !json.data) throw new Error(`GraphQL request failed (${status}): ${text.slice(0, 500)}`);
  return { data: json.data, text };
}

/** One GraphQL request, for set-up and checks outside the timed runs. */
export const gql = <T = any>(url: string, query: string, variables: Record<string, unknown> = {}, token?: string) =>
  postGraphQL<T>(url, JSON.stringify({ query, variables }), { token });
