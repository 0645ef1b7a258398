import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { countDeliveriesIn, workerRegistry } from '../activities/metrics';
import type { Config } from '../lib/config';
import { ApiError } from '../lib/errors';

export interface WorkerMetricsServer {
  /** The port it listens on (the one asked for, or the one the system gave for 0 in tests). */
  port: number;
  close(): Promise<void>;
}

/**
 * Where the Temporal SDK's own exporter listens: WORKER_METRICS_HOST, on the port after ours. It has no
 * authentication of its own, so the host is its only guard (docs/observability.md#metrics).
 */
export function sdkMetricsBindAddress(config: Pick<Config, 'workerMetricsHost' | 'workerMetricsPort'>): string {
  const host = config.workerMetricsHost.includes(':') ? `[${config.workerMetricsHost}]` : config.workerMetricsHost;
  return `${host}:${config.workerMetricsPort + 1}`;
}

/**
 * Serves the worker's registry (activities/metrics.ts) at `GET /metrics` in the Prometheus text format,
 * on `host` (WORKER_METRICS_HOST). With `token` (METRICS_TOKEN), only for `Authorization: Bearer
 * <token>`, as the API's `/metrics`: the counters tell every tenant's volume. The delivery gauges count in `db`.
 */
export async function startWorkerMetrics(port: number, db: Knex, host?: string, token?: string): Promise<WorkerMetricsServer> {
  countDeliveriesIn(db);
  const expected = token ? digest(`Bearer ${token}`) : undefined;
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    if (expected && refused(req, res, expected)) return;
    workerRegistry.metrics().then(
      (text) => res.writeHead(200, { 'Content-Type': workerRegistry.contentType }).end(text),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise<void>((resolve) => {
      countDeliveriesIn(undefined);
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}

const digest = (text: string) => createHash('sha256').update(text).digest();

/**
 * Answers 401 in the API's error envelope (api/errors.ts) unless the request carries the expected
 * bearer; compared as digests, in constant time whatever the lengths. True when it answered.
 */
function refused(req: IncomingMessage, res: ServerResponse, expected: Buffer): boolean {
  const given = req.headers.authorization;
  if (given && timingSafeEqual(digest(given), expected)) return false;
  const err = new ApiError(given ? 'invalid_token' : 'missing_authorization');
  res.writeHead(err.status, { 'Content-Type': 'application/json', 'WWW-Authenticate': 'Bearer' }).end(JSON.stringify({
    message: err.message, success: false, error: { code: err.status, message: err.message, details: { reason: err.reason } },
  }));
  return true;
}
