import { ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from 'pg';
import { loadConfig, ROOT_DIR } from '../db/local-state';
import { startLocalTemporal, LocalTemporal, TemporalCliMissing, TemporalExecutable } from './local-temporal';
import { signDevToken } from '../lib/tokens';
import { workerNodeArgs } from '../lib/config';
import { createDb, migrate } from '../db/knex';
import { startEmbeddedPostgres, EmbeddedPg, EmbeddedPgPortInUse } from '../db/embedded';
import { DEMO_USER, DEMO_WORKSPACE, seedDemo, type Demo } from './seed';
import { embeddedPgPort, LOCAL_TEMPORAL_PORT } from '../lib/local-stack';
import { ensureTemporalCli } from './temporal-cli';
import { ConfigError, type Config } from '../lib/config';

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

/** Postgres up and the login accepted, checked first: knex would print a stack on its way to the same error. */
async function reachPostgres(url: string): Promise<void> {
  const client = new Client({ connectionString: url });
  client.on('error', () => {});
  try {
    await client.connect();
  } finally {
    await client.end().catch(() => {});
  }
}

let stopAll: ((code: number) => Promise<void>) | undefined;
/** How far the start got: what to do about a failure depends on it. */
let stage: 'configuration' | 'postgres' | 'temporal' | 'processes' = 'configuration';

async function main(): Promise<void> {
  const config = loadConfig();
  stage = 'postgres';
  const children: { name: string; proc: ChildProcess }[] = [];
  let pg: EmbeddedPg | undefined;
  let temporal: LocalTemporal | undefined;
  let stopping = false;
  let stopped: Promise<void> | undefined;

  // Every caller (a signal, a child's exit, a failure) waits for the one ordered stop.
  const stop = (code: number): Promise<void> => (stopped ??= (async () => {
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
  })());
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
    pg = await startEmbeddedPostgres(config.dataDir, embeddedPgPort());
    step(`Postgres: embedded, data in ${pg.databaseDir}`);
    databaseUrl = pg.url;
  } else {
    step('Postgres: DATABASE_URL');
  }
  await reachPostgres(databaseUrl);
  const db = createDb(databaseUrl, { max: 2 });
  await migrate(db);
  step('migrations applied');

  stage = 'temporal';
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

  stage = 'processes';
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

  sayRunning(config, apiUrl, { address: temporalAddress, ui: temporalUi }, demo);
}

/** Where everything runs and how to call it: the last thing `npm start` prints. */
function sayRunning(config: Config, apiUrl: string, temporal: { address: string; ui: string }, demo: Demo): void {
  const token = config.jwt.secret
    ? signDevToken(config, { user: DEMO_USER, workspace: DEMO_WORKSPACE, ttlSeconds: 30 * 24 * 3600 })
    : '(JWT_SECRET is not set: sign tokens with your auth provider)';
  say();
  say('Switchboard is running.');
  say(`  API            ${apiUrl}/v1   (OpenAPI: ${apiUrl}/v1/openapi.json)`);
  say(`  Dashboard      ${apiUrl}/dashboard`);
  say(`  Temporal UI    ${temporal.ui}`);
  say(`  Temporal       ${temporal.address}`);
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

/** A failure as one line: what went wrong and what to do about it, never a stack. */
function failureLine(err: unknown): string {
  if (err instanceof TemporalCliMissing) return err.message;
  const advice = adviceFor(err);
  return `Switchboard failed to start: ${whatWentWrong(err)}${advice ? ` — ${advice}` : ''}`;
}

function whatWentWrong(err: unknown): string {
  // A connection refused on every address is an AggregateError with an empty message.
  const cause = err instanceof AggregateError && !err.message ? err.errors[0] : err;
  const text = cause instanceof Error ? cause.message || (cause as NodeJS.ErrnoException).code || cause.name : String(cause);
  return text.split('\n').map((line) => line.trim()).find(Boolean) ?? 'an unknown error';
}

function adviceFor(err: unknown): string {
  if (err instanceof ConfigError) return '';
  if (err instanceof EmbeddedPgPortInUse) return 'stop what listens there, or set EMBEDDED_PG_PORT to a free port';
  const { path, syscall } = (err ?? {}) as NodeJS.ErrnoException;
  if (path && syscall && !syscall.startsWith('spawn')) return `let this user write ${path}, or set SB_DATA_DIR to a directory it can write`;
  switch (stage) {
    case 'configuration': return 'check SB_DATA_DIR and the settings in your environment';
    case 'postgres': return process.env.DATABASE_URL
      ? 'check that DATABASE_URL names a running Postgres this machine can reach and log in to'
      : 'fix that, or set DATABASE_URL to a Postgres of your own';
    case 'temporal': return process.env.TEMPORAL_ADDRESS
      ? 'check that TEMPORAL_ADDRESS names a running Temporal server'
      : 'is another Temporal dev server running (ports 7233, 8233)? Stop it, or set TEMPORAL_ADDRESS to a server of your own';
    case 'processes': return 'the lines above say why';
  }
}

let failed = false;
async function fail(err: unknown): Promise<void> {
  if (failed) return;
  failed = true;
  console.error(failureLine(err));
  if (stopAll) await stopAll(1);
  process.exit(1);
}
// A child process that cannot be spawned emits 'error' outside any await: it must end the same way.
process.on('uncaughtException', (err) => void fail(err));
process.on('unhandledRejection', (err) => void fail(err));
main().catch(fail);
