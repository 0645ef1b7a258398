import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, ROOT_DIR } from '../db/local-state';
import { startLocalTemporal, LocalTemporal, TemporalCliMissing, TemporalExecutable } from './local-temporal';
import { signDevToken } from '../lib/tokens';
import { workerNodeArgs } from '../lib/config';
import { createDb, migrate } from '../db/knex';
import { startEmbeddedPostgres, EmbeddedPg } from '../db/embedded';
import { DEMO_USER, DEMO_WORKSPACE, seedDemo } from './seed';
import { embeddedPgPort, LOCAL_TEMPORAL_PORT } from '../lib/local-stack';
import { ensureTemporalCli } from './temporal-cli';

/**
 * `npm start`: the whole of Switchboard on one machine. Postgres (DATABASE_URL or embedded), migrations,
 * Temporal (TEMPORAL_ADDRESS or a local dev server with its UI), the sandbox processor, a worker and the
 * API, plus a demo workspace. Ctrl-C or SIGTERM stops every child and then the servers, in that order.
 */
const say = (line = '') => process.stdout.write(`${line}\n`);
const step = (what: string) => say(`  · ${what}`);

async function waitForHttp(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${url}: the process exited with code ${child.exitCode}`);
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up within ${timeoutMs / 1000}s`);
}

let stopAll: ((code: number) => Promise<void>) | undefined;

async function main(): Promise<void> {
  const config = loadConfig();
  const children: { name: string; proc: ChildProcess }[] = [];
  let pg: EmbeddedPg | undefined;
  let temporal: LocalTemporal | undefined;
  let stopping = false;

  const stop = async (code: number) => {
    if (stopping) return;
    stopping = true;
    say('\nStopping…');
    // Children first (they drain HTTP requests and activities), then Temporal, then Postgres.
    await Promise.all(children.reverse().map(({ name, proc }) => new Promise<void>((resolve) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
      const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      proc.once('exit', () => { clearTimeout(killer); step(`${name} stopped`); resolve(); });
      proc.kill('SIGTERM');
    })));
    if (temporal) await temporal.stop().then(() => step('Temporal stopped'), () => {});
    if (pg) await pg.stop().then(() => step('Postgres stopped'), () => {});
    process.exit(code);
  };
  stopAll = stop;
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  say('Switchboard — starting');
  // Without TEMPORAL_ADDRESS the Temporal CLI is found (or, on a first run, installed into the data dir)
  // while Postgres starts. ensureTemporalCli never rejects.
  const cli: Promise<TemporalExecutable> | undefined = config.temporal.address
    ? undefined
    : ensureTemporalCli('temporal', { dataDir: config.dataDir, log: step });
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    step(`Postgres: embedded, data in ${join(config.dataDir, 'pg')}`);
    pg = await startEmbeddedPostgres(config.dataDir, embeddedPgPort());
    databaseUrl = pg.url;
  } else {
    step('Postgres: DATABASE_URL');
  }
  const db = createDb(databaseUrl, { max: 2 });
  await migrate(db);
  step('migrations applied');

  let temporalAddress = config.temporal.address;
  let temporalUi = config.temporal.uiUrl;
  if (!temporalAddress) {
    const executable = await cli!;
    step(`Temporal: local dev server, state in ${join(config.dataDir, 'temporal.db')}`);
    temporal = await startLocalTemporal({ executable, dbFile: join(config.dataDir, 'temporal.db'), port: LOCAL_TEMPORAL_PORT, uiPort: 8233 });
    temporalAddress = temporal.address;
    temporalUi = temporal.uiUrl ?? temporalUi;
  } else {
    step(`Temporal: ${temporalAddress}`);
  }

  const childEnv: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_UI_URL: temporalUi,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };
  const launch = (name: string, script: string, env: NodeJS.ProcessEnv = {}, nodeArgs: string[] = []) => {
    const proc = spawn(process.execPath, [...nodeArgs, join(ROOT_DIR, 'dist', script)], {
      env: { ...childEnv, SB_PROCESS: name, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    proc.once('exit', (code, signal) => {
      if (!stopping) {
        say(`${name} exited unexpectedly (${signal ?? code}); stopping everything`);
        void stop(1);
      }
    });
    children.push({ name, proc });
    return proc;
  };

  if (!config.simulatorUrl && existsSync(join(ROOT_DIR, 'dist', 'simulator', 'main.js'))) {
    const port = Number(process.env.SIMULATOR_PORT ?? 4010);
    childEnv.SIMULATOR_URL = `http://127.0.0.1:${port}`;
    const sim = launch('simulator', 'simulator/main.js', { SIMULATOR_PORT: String(port) });
    await waitForHttp(`${childEnv.SIMULATOR_URL}/healthz`, sim);
    step(`sandbox processor: ${childEnv.SIMULATOR_URL}`);
  }

  const demo = await seedDemo(db, config);
  await db.destroy();
  step('demo workspace ready');

  launch('worker', 'worker/main.js', {}, workerNodeArgs(config));
  const api = launch('api', 'api/main.js');
  const apiUrl = `http://localhost:${config.port}`;
  await waitForHttp(`${apiUrl}/healthz`, api);

  const token = config.jwt.secret
    ? signDevToken(config, { user: DEMO_USER, workspace: DEMO_WORKSPACE, ttlSeconds: 30 * 24 * 3600 })
    : '(JWT_SECRET is not set: sign tokens with your auth provider)';
  say();
  say('Switchboard is running.');
  say(`  API            ${apiUrl}/v1   (OpenAPI: ${apiUrl}/v1/openapi.json)`);
  say(`  Dashboard      ${apiUrl}/dashboard`);
  say(`  Temporal UI    ${temporalUi}`);
  say(`  Temporal       ${temporalAddress}`);
  say(`  Metrics        ${apiUrl}/metrics (API)${config.workerMetricsPort
    ? `, http://localhost:${config.workerMetricsPort}/metrics (worker), http://localhost:${config.workerMetricsPort + 1}/metrics (Temporal SDK)`
    : ' (worker metrics off: WORKER_METRICS_PORT=0)'}`);
  say();
  say(`  Demo account   ${demo.accountId} (production), ${demo.sandboxAccountId} (sandbox)`);
  say(`  Demo JWT       ${token}`);
  say(`  Demo key       ${demo.secretKey}`);
  say();
  say(`  Try: curl -H "Authorization: Bearer ${demo.secretKey}" ${apiUrl}/v1/accounts`);
  say('  Ctrl-C stops everything.');
}

main().catch(async (err) => {
  // One line, no stack: what went wrong (or, without any Temporal CLI, what to install).
  if (err instanceof TemporalCliMissing) console.error(err.message);
  else console.error('Switchboard failed to start:', err instanceof Error ? err.message : err);
  if (stopAll) await stopAll(1);
  process.exit(1);
});
