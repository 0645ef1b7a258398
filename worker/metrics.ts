import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Knex } from 'knex';
import { countDeliveriesIn, workerRegistry } from '../activities/metrics';

export interface WorkerMetricsServer {
  /** The port it listens on (the one asked for, or the one the system gave for 0 in tests). */
  port: number;
  close(): Promise<void>;
}

/**
 * Serves the worker's registry (activities/metrics.ts) at `GET /metrics` in the Prometheus text format,
 * without credentials: bind it where only the scraper reaches it. The delivery gauges count in `db`.
 */
export async function startWorkerMetrics(port: number, db: Knex, host?: string): Promise<WorkerMetricsServer> {
  countDeliveriesIn(db);
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
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
