import './start-tracing';
import { exitOnConfigError } from '../lib/config';
import { loadConfig } from '../db/local-state';
import { logger } from '../lib/logger';
import { createDb } from '../db/knex';
import { createApp } from './app';
import { createApiDeps, createHttpServer } from './server';
import { purgeExpiredIdempotencyKeys } from '../db/idempotency';
import { currentTracing } from '../telemetry/tracing';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (npm start sets it)');
  const db = createDb(config.databaseUrl, { max: 20 });
  const deps = createApiDeps(db, config, config.temporal.address ?? 'localhost:7233');
  // Taken before the first request, so no Idempotency-Key is claimed without it (null if Postgres is down).
  await deps.lease.id();
  const server = createHttpServer(createApp(deps));
  await new Promise<void>((resolve) => server.listen(config.port, resolve));
  logger.info({ port: config.port }, 'api listening');

  const purge = setInterval(() => purgeExpiredIdempotencyKeys(db).catch((err) => logger.warn({ err }, 'idempotency purge failed')), 60 * 60 * 1000);
  purge.unref();

  // Graceful shutdown: stop accepting, let in-flight requests finish, then close the pools.
  const stop = async () => {
    logger.info('api stopping');
    // A connection that never goes idle, or a collector that does not answer, must not keep it up.
    setTimeout(() => process.exit(0), 15_000).unref();
    clearInterval(purge);
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await deps.lease.close();
    await db.destroy();
    const client = await deps.temporal().catch(() => undefined);
    await client?.connection.close();
    await currentTracing()?.shutdown();
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err) => {
  exitOnConfigError(err, 'api');
  logger.error({ err }, 'api failed to start');
  process.exit(1);
});
