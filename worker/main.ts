import { DefaultLogger, LogLevel, NativeConnection, Runtime } from '@temporalio/worker';
import { exitOnConfigError } from '../lib/config';
import { loadConfig } from '../db/local-state';
import { logger } from '../lib/logger';
import { connectClient, connectionOptions } from '../workflows/client';
import { createDb } from '../db/knex';
import { createWorkers } from './worker';
import { ensureStuckPaymentWatchdog } from '../workflows/watchdog/client';
import { watchdogInterval } from '../workflows/watchdog/contract';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (npm start sets it)');
  const level = (process.env.LOG_LEVEL ?? 'info').toUpperCase();
  Runtime.install({ logger: new DefaultLogger((['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'].includes(level) ? level : 'INFO') as LogLevel) });
  const db = createDb(config.databaseUrl, { max: 20 });
  const address = config.temporal.address ?? 'localhost:7233';
  const connection = await NativeConnection.connect(connectionOptions(config, address));
  const workers = await createWorkers({
    db, config, connection, namespace: config.temporal.namespace,
    // A pre-built bundle elsewhere than dist/ (the test suite's, for worker processes it kills and restarts).
    workflowBundlePath: process.env.WORKFLOW_BUNDLE_PATH || undefined,
  });
  logger.info({ address, task_queues: workers.map((w) => w.options.taskQueue) }, 'worker started');
  // The stuck-payment watchdog runs once per namespace: the first worker to boot starts it.
  connectClient(config, address)
    .then(async (client) => {
      try {
        await ensureStuckPaymentWatchdog(client, { checkEveryMs: watchdogInterval(config.stuckPaymentThresholdMs) });
      } finally {
        await client.connection.close();
      }
    })
    .catch((err) => logger.warn({ err }, 'stuck-payment watchdog could not be started'));
  // Worker.run resolves after SIGINT/SIGTERM once in-flight activities and tasks have drained.
  await Promise.all(workers.map((w) => w.run()));
  await connection.close();
  await db.destroy();
  logger.info('worker stopped');
}

main().catch((err) => {
  exitOnConfigError(err, 'worker');
  logger.error({ err }, 'worker failed');
  process.exit(1);
});
