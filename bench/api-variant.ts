import '../api/start-tracing';
import { createServer } from 'node:http';
import { loadConfig } from '../db/local-state';
import { createDb } from '../db/knex';
import { createApp } from '../api/app';
import { createApiDeps } from '../api/server';
import { ROUTES } from '../api/routes';

/**
 * The API as api/main.ts runs it, with the request metrics switchable (BENCH_METRICS=off), so the bench
 * can measure what metrics cost. Tracing is switched the product's way, by OTEL_EXPORTER_OTLP_ENDPOINT.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const db = createDb(config.databaseUrl!, { max: 20 });
  const deps = createApiDeps(db, config, config.temporal.address ?? 'localhost:7233');
  const server = createServer(createApp(deps, ROUTES, { metrics: process.env.BENCH_METRICS !== 'off' }).callback());
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  console.log('api variant listening');
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
