import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { Config } from '../../lib/config';
import { workerNodeArgs } from '../../lib/config';
import { createDb, migrate } from '../../db/knex';
import { startEmbeddedPostgres } from '../../db/embedded';
import { WORKFLOW_INTERCEPTOR_MODULES } from '../../telemetry/tracing';
import { freePort, nodeService, readyWhenHttp, readyWhenLogged, Service, temporalService } from './processes';

/**
 * The stack the chaos suite runs against, every part its own process as a deployment runs them:
 * Postgres (DATABASE_URL's server, else an embedded one) with a database of the run's own, a Temporal
 * dev server on its own port and SQLite file, the sandbox processor, two workers and the API.
 */
export interface ChaosStack {
  apiUrl: string;
  simulatorUrl: string;
  databaseUrl: string;
  temporal: Service;
  simulator: Service;
  workers: [Service, Service];
  api: Service;
  /** Terminates every backend of the run's database (pg_terminate_backend); how many there were. */
  cutPostgres(): Promise<number>;
  close(): Promise<void>;
}

export interface ChaosStackOptions {
  config: Config;
  /** Where logs, the Temporal store and the workflow bundle go. */
  scratch: string;
  /** The Temporal CLI binary (scripts/temporal-cli.ts). */
  temporalCli: string;
  /** A pre-built workflow bundle; bundled into `scratch` when absent. */
  bundlePath?: string;
  log: (line: string) => void;
}

export async function startChaosStack(opts: ChaosStackOptions): Promise<ChaosStack> {
  const { config, scratch, log } = opts;
  const logDir = join(scratch, 'logs');
  mkdirSync(logDir, { recursive: true });
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => {});
  };
  try {
    const [databases, bundlePath] = await Promise.all([runDatabase(config, closers), opts.bundlePath ?? bundle(scratch)]);
    log(`  · Postgres: database ${databases.name}`);
    const [temporalPort, httpPort, metricsPort, simPort, apiPort] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const temporal = new Service(temporalService(opts.temporalCli, { port: temporalPort, httpPort, metricsPort, dbFile: join(scratch, 'temporal.db') }), logDir);
    closers.push(() => temporal.stop());
    await temporal.start();
    log(`  · Temporal: 127.0.0.1:${temporalPort}`);

    const simulatorUrl = `http://127.0.0.1:${simPort}`;
    const apiUrl = `http://127.0.0.1:${apiPort}`;
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      NODE_ENV: 'development', LOG_LEVEL: 'warn', DATABASE_URL: databases.url, TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`,
      TEMPORAL_NAMESPACE: 'default', SIMULATOR_URL: simulatorUrl, SB_DATA_DIR: config.dataDir, JWT_SECRET: config.jwt.secret,
      SYSTEM_JWT_SECRET: config.jwt.systemSecret, VAULT_KEYS: config.vaultKeys, API_KEY_PEPPER: config.apiKeyPepper,
      WEBHOOK_ALLOW_PRIVATE: 'true', WORKFLOW_BUNDLE_PATH: bundlePath,
      // Two workers on one machine: a fixed metrics port would be taken twice.
      WORKER_METRICS_PORT: '0',
    };
    const simulator = new Service(nodeService('simulator', 'simulator/main.ts', { ...env, SIMULATOR_PORT: String(simPort) }, readyWhenHttp(`${simulatorUrl}/healthz`)), logDir);
    const workers = (['worker-a', 'worker-b'] as const).map((name) => new Service(
      nodeService(name, 'worker/main.ts', { ...env, LOG_LEVEL: 'info' }, readyWhenLogged('worker started'), workerNodeArgs(config)), logDir,
    )) as [Service, Service];
    const api = new Service(nodeService('api', 'api/main.ts', { ...env, PORT: String(apiPort) }, readyWhenHttp(`${apiUrl}/healthz`)), logDir);
    closers.push(() => simulator.stop());
    for (const service of [...workers, api]) closers.push(() => service.stop());
    await simulator.start();
    await Promise.all([...workers.map((w) => w.start()), api.start()]);
    log(`  · processes: simulator ${simulatorUrl}, worker-a, worker-b, api ${apiUrl}`);
    return {
      apiUrl, simulatorUrl, databaseUrl: databases.url, temporal, simulator, workers, api,
      cutPostgres: databases.cut,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

/**
 * A database of the run's own on DATABASE_URL's server (an embedded Postgres without one), migrated,
 * dropped at the end. The terminations go through a connection to the server's `postgres` database, so
 * that they never cut themselves.
 */
async function runDatabase(config: Config, closers: (() => Promise<unknown>)[]) {
  let serverUrl = config.databaseUrl;
  if (!serverUrl) {
    const pg = await startEmbeddedPostgres(join(config.dataDir, 'chaos'), Number(process.env.CHAOS_PG_PORT ?? 54332), 'postgres');
    closers.push(pg.stop);
    serverUrl = pg.url;
  }
  const name = `switchboard_chaos_${Date.now()}_${process.pid}`;
  const adminUrl = new URL(serverUrl);
  adminUrl.pathname = '/postgres';
  const admin = createDb(adminUrl.toString(), { max: 1 });
  closers.push(() => admin.destroy());
  await admin.raw(`CREATE DATABASE "${name}"`);
  if (!process.env.CHAOS_KEEP_DATABASE) closers.push(() => admin.raw(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), { max: 2 });
  await migrate(db);
  await db.destroy();
  const cut = async () => {
    const { rows } = await admin.raw<{ rows: unknown[] }>(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ? AND pid <> pg_backend_pid()', [name],
    );
    return rows.length;
  };
  return { name, url: url.toString(), cut };
}

async function bundle(scratch: string): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../workflows'), workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES, logger: new DefaultLogger('WARN'),
  });
  const path = join(scratch, 'workflow-bundle.js');
  writeFileSync(path, code);
  return path;
}
