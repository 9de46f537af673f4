// One JSON POST over a given keep-alive agent, for the bench's own clients (the open-loop
// sender, the count pollers of the hot-post and live scenarios).
import http from 'node:http';

export interface PostOptions {
  agent: http.Agent;
  token?: string;
  /** The request fails when no answer came within this long. */
  timeoutMs?: number;
  /** Holds the request until it settles, so a caller can abandon the ones still open. */
  track?: Set<http.ClientRequest>;
}

/** Resolves with the answer's status and text; rejects when the connection fails first. */
export function httpPost(url: string, body: string, options: PostOptions): Promise<{ status: number; text: string }> {
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
