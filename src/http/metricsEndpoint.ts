// Prometheus's endpoint: on the API port at METRICS_PATH, or on a listener of its own
// (METRICS_PORT) that serves nothing else, so the API port need not show it to the public.
import { createServer, type ServerResponse } from 'node:http';
import type { Metrics } from '../metrics.js';

export async function sendMetrics(res: ServerResponse, metrics: Metrics): Promise<void> {
  const body = await metrics.registry.metrics();
  res.writeHead(200, { 'content-type': metrics.registry.contentType });
  res.end(body);
}

/** A listener that answers `path` with the metrics and 404 to anything else. */
export function createMetricsServer(metrics: Metrics, path: string) {
  return createServer((req, res) => {
    const pathname = (req.url ?? '/').split('?')[0];
    if (pathname === path && (req.method === 'GET' || req.method === 'HEAD')) {
      sendMetrics(res, metrics).catch(() => res.destroy());
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain' }).end('not found\n');
  });
}
