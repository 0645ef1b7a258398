// The stack the bench measures, brought up the way `npm start` does: Postgres (a fresh database),
// migrations, a Temporal dev server, the simulator, a worker, the API, the bare baseline and the floor's
// worker, each a process of its own writing to a log file. Apart from the scenarios, which only use it.

import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as netServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ROOT_DIR } from '../db/local-state';
import { startLocalTemporal } from '../scripts/local-temporal';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { workerNodeArgs, type Config } from '../lib/config';
import { createDb, migrate, type Db } from '../db/knex';
import { startEmbeddedPostgres } from '../db/embedded';
import { round } from './measure';
import { log } from './runs';

/** Every process the bench started, oldest first: stopped at the end, killed on a failure. */
export const children: ChildProcess[] = [];

export async function freePort(): Promise<number> {
  const server = netServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

/** Where the processes the bench starts write their output (a directory in the bench's scratch space). */
let logDir = tmpdir();

/**
 * Starts `dist/<script>` with its stdout and stderr going to a file, as a deployment writing its logs to
 * a file or a journal would: a pipe read by this process (busy driving the load on the same two cores)
 * filled up, and pino's writes then waited 100 ms for room each time (sonic-boom's EAGAIN retry) — a
 * request-logging cost no deployment with a log reader that keeps up would see. `ready` is a line to wait for.
 */
export function launch(script: string, env: NodeJS.ProcessEnv, ready: string, args: string[] = []): Promise<ChildProcess> {
  // BENCH_NODE_ARGS: flags for every process the bench starts, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`
  // (Node refuses --cpu-prof in NODE_OPTIONS).
  const nodeArgs = process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ').filter(Boolean) : [];
  const logFile = join(logDir, `${children.length}-${script.replace(/[/.]/g, '-')}.log`);
  const out = openSync(logFile, 'a');
  const proc = spawn(process.execPath, [...args, ...nodeArgs, join(ROOT_DIR, 'dist', script)], { env: { ...process.env, ...env }, stdio: ['ignore', out, out] });
  closeSync(out);
  children.push(proc);
  const output = () => readFileSync(logFile, 'utf8');
  return new Promise((resolve, reject) => {
    let started = false;
    const check = setInterval(() => {
      if (!ready || output().includes(ready)) {
        started = true;
        clearInterval(check);
        resolve(proc);
      }
    }, ready ? 100 : 0);
    proc.once('exit', (code) => {
      clearInterval(check);
      if (!started) reject(new Error(`${script} exited (${code}):\n${output().slice(-2000)}`));
    });
  });
}

async function waitHttp(url: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

/** A local HTTP server answering 200 to everything, calling `onRequest` with each request's body. */
export async function sink(onRequest: (req: IncomingMessage, body: string, res: ServerResponse) => void = (_req, _body, res) => res.end('ok')): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => onRequest(req, Buffer.concat(chunks).toString(), res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/**
 * A merchant's webhook endpoint in the driver's process: passes the endpoint's handshake (echoes its
 * challenge) and answers every delivery 200, handing its parsed body to `onEvent`.
 */
export function webhookSink(onEvent: (event: { type?: string; data?: { object?: { id?: string } } }) => void): Promise<{ server: Server; url: string }> {
  return sink((_req, raw, res) => {
    const body = JSON.parse(raw || '{}');
    if (body.type === 'webhook_endpoint.verification') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ challenge: body.data.challenge }));
      return;
    }
    res.end('ok');
    onEvent(body);
  });
}

/** Pids of the processes whose command name is `comm` (the Temporal server, Postgres's backends), when they run on this machine. */
export const pidsNamed = (comm: string) => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm;
  } catch {
    return false; // gone meanwhile
  }
}).map(Number);

export const rssMb = (pid: number) => round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

/** The running stack: where each process listens, its pid, and the bench's own connections. */
export interface Stack {
  db: Db;
  databaseUrl: string;
  /** What every process the bench starts is given (a scenario starting one more adds to it). */
  env: NodeJS.ProcessEnv;
  /** The API's base URL. */
  api: string;
  apiProc: ChildProcess;
  simProc: ChildProcess;
  worker: ChildProcess;
  baseProc: ChildProcess;
  basePort: number;
  floorWorker: ChildProcess;
  client: Client;
  /** Node flags a worker starts with (workerNodeArgs), for a scenario that starts one more. */
  workerArgs: string[];
}

/** A fresh database on DATABASE_URL's server (or an embedded one), migrated; dropped by `stops`. */
async function benchDatabase(config: Config, stops: (() => Promise<unknown>)[]): Promise<{ db: Db; databaseUrl: string }> {
  let serverUrl = config.databaseUrl;
  if (!serverUrl) {
    const pg = await startEmbeddedPostgres(join(config.dataDir, 'bench'), Number(process.env.BENCH_PG_PORT ?? 54331), 'postgres');
    stops.push(pg.stop);
    serverUrl = pg.url;
  }
  const dbName = `switchboard_bench_${Date.now()}`;
  const admin = createDb(serverUrl, { max: 1 });
  await admin.raw(`CREATE DATABASE "${dbName}"`);
  stops.push(async () => { await admin.raw(`DROP DATABASE IF EXISTS "${dbName}" WITH (FORCE)`); await admin.destroy(); });
  const url = new URL(serverUrl);
  url.pathname = `/${dbName}`;
  const databaseUrl = url.toString();
  const db = createDb(databaseUrl, { max: 4 });
  stops.push(() => db.destroy());
  await migrate(db);
  return { db, databaseUrl };
}

/**
 * A worker's environment: its metrics on a port of its own (the default 9464 is taken by a second
 * worker, or by another bench on this machine), the SDK's on the next.
 */
const workerEnv = (env: NodeJS.ProcessEnv, metricsPort: number): NodeJS.ProcessEnv => ({ ...env, LOG_LEVEL: 'info', WORKER_METRICS_PORT: String(metricsPort) });

/** Brings the stack up; what must be stopped at the end goes onto `stops`, the processes into `children`. */
export async function startStack(config: Config, scratch: string, stops: (() => Promise<unknown>)[]): Promise<Stack> {
  logDir = join(scratch, 'logs');
  mkdirSync(logDir);
  const { db, databaseUrl } = await benchDatabase(config, stops);
  let temporalAddress = config.temporal.address;
  if (!temporalAddress) {
    const executable = await ensureTemporalCli('temporal', { dataDir: config.dataDir, log });
    const temporal = await startLocalTemporal({ executable, dbFile: join(scratch, 'temporal.db'), port: await freePort() });
    stops.push(temporal.stop);
    temporalAddress = temporal.address;
  }

  const [apiPort, simPort, basePort] = await Promise.all([freePort(), freePort(), freePort()]);
  const env: NodeJS.ProcessEnv = {
    NODE_ENV: 'development', LOG_LEVEL: 'warn', DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: temporalAddress,
    SIMULATOR_URL: `http://127.0.0.1:${simPort}`, JWT_SECRET: config.jwt.secret, VAULT_KEYS: config.vaultKeys,
    API_KEY_PEPPER: config.apiKeyPepper, SB_DATA_DIR: config.dataDir, WEBHOOK_ALLOW_PRIVATE: 'true',
    // The per-credential limit stays on, as shipped (its counting and headers are part of every read),
    // set above any rate a scenario drives from its one key.
    RATE_LIMIT_RPS: '1000000',
    // The disputes scenario sends a processor's notices from one address: its limit must not set the pace.
    PROVIDER_WEBHOOK_RPS: '1000000',
  };
  const simProc = await launch('simulator/main.js', { ...env, SIMULATOR_PORT: String(simPort) }, '');
  await waitHttp(`http://127.0.0.1:${simPort}/healthz`);
  // Started as npm start and the image start it: with the main thread's heap limit (WORKER_HEAP_MB).
  const workerArgs = workerNodeArgs(config);
  const worker = await launch('worker/main.js', workerEnv(env, await freePort()), 'worker started', workerArgs);
  // Request logging on, as in production: the read ratio includes it.
  const apiProc = await launch('api/main.js', { ...env, PORT: String(apiPort), LOG_LEVEL: 'info' }, '');
  const baseProc = await launch('bench/baseline-read.js', { ...env, PORT: String(basePort) }, 'baseline listening');
  const floorWorker = await launch('bench/floor/worker.js', env, 'floor worker started');
  const api = `http://127.0.0.1:${apiPort}`;
  await waitHttp(`${api}/healthz`);
  const client = new Client({ connection: await Connection.connect({ address: temporalAddress }) });
  return { db, databaseUrl, env, api, apiProc, simProc, worker, baseProc, basePort, floorWorker, client, workerArgs };
}

/** One more worker like the stack's, polling the same task queues (a scenario with two workers). */
export async function startWorker(stack: Stack): Promise<ChildProcess> {
  return launch('worker/main.js', workerEnv(stack.env, await freePort()), 'worker started', stack.workerArgs);
}

/** Stops a process the bench started, as a deployment does (SIGTERM, its drain), killing it after 30 s. */
export async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise((r) => proc.once('exit', r));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  await exited;
  clearTimeout(timer);
}
