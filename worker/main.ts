import './start-tracing';
import { getHeapStatistics, setFlagsFromString } from 'node:v8';
import { DefaultLogger, LogLevel, NativeConnection, Runtime } from '@temporalio/worker';
import { exitOnConfigError } from '../lib/config';
import { loadConfig } from '../db/local-state';
import { logger } from '../lib/logger';
import { connectClient, connectionOptions } from '../workflows/client';
import { createDb } from '../db/knex';
import { createWorkers } from './worker';
import { sdkMetricsBindAddress, startWorkerMetrics } from './metrics';
import { ensureStuckPaymentWatchdog } from '../workflows/watchdog/client';
import { watchdogInterval } from '../contracts/watchdog';
import { currentTracing } from '../telemetry/tracing';

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.databaseUrl) throw new Error('DATABASE_URL is required (npm start sets it)');
  const level = (process.env.LOG_LEVEL ?? 'info').toUpperCase();
  const metricsPort = config.workerMetricsPort;
  Runtime.install({
    logger: new DefaultLogger((['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'].includes(level) ? level : 'INFO') as LogLevel),
    // The SDK's own metrics (task slots, poll latency, workflow cache) come from its native core, which
    // serves them itself: on the port after ours, same host (docs/observability.md#metrics).
    ...(metricsPort ? { telemetryOptions: { metrics: { prometheus: { bindAddress: sdkMetricsBindAddress(config) } } } } : {}),
  });
  const db = createDb(config.databaseUrl, { max: 20 });
  const metrics = metricsPort ? await startWorkerMetrics(metricsPort, db, config.workerMetricsHost, config.metricsToken) : undefined;
  const address = config.temporal.address ?? 'localhost:7233';
  const connection = await NativeConnection.connect(connectionOptions(config, address));
  // The main thread's limit is the process's start flag (workerNodeArgs): say so when it is missing.
  const heapLimitMb = getHeapStatistics().heap_size_limit / 1048576;
  if (config.workerHeapMb > 0 && heapLimitMb > config.workerHeapMb * 1.5) {
    logger.warn({ heap_limit_mb: Math.round(heapLimitMb), worker_heap_mb: config.workerHeapMb },
      `the worker was started without --max-old-space-size=${config.workerHeapMb} (WORKER_HEAP_MB): its heap grows toward V8's default limit`);
  }
  // Read by every isolate created from here on: the workflow threads the workers start below.
  if (config.workerWorkflowHeapMb > 0) setFlagsFromString(`--max-old-space-size=${config.workerWorkflowHeapMb}`);
  const worker = await createWorkers({
    db, config, connection, namespace: config.temporal.namespace,
    // A pre-built bundle elsewhere than dist/ (the test suite's, for worker processes it kills and restarts).
    workflowBundlePath: process.env.WORKFLOW_BUNDLE_PATH || undefined,
  });
  logger.info({ address, task_queues: worker.workers.map((w) => w.options.taskQueue), metrics_host: metrics && config.workerMetricsHost, metrics_port: metrics?.port }, 'worker started');
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
  // Worker.run resolves after SIGINT/SIGTERM once in-flight activities and tasks have drained; the dispatcher stops after them.
  await worker.run();
  await metrics?.close();
  await connection.close();
  await db.destroy();
  await currentTracing()?.shutdown();
  logger.info('worker stopped');
}

main().catch((err) => {
  exitOnConfigError(err, 'worker');
  logger.error({ err }, 'worker failed');
  process.exit(1);
});
