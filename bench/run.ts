import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo, createServer as netServer } from 'node:net';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client, Connection } from '@temporalio/client';
import { loadConfig, ROOT_DIR } from '../db/local-state';
import { startLocalTemporal, TemporalCliMissing } from '../scripts/local-temporal';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { signDevToken } from '../lib/tokens';
import { createDb, migrate } from '../db/knex';
import { startEmbeddedPostgres } from '../db/embedded';
import { appendEvents } from '../db/events';
import { webhookClient } from '../workflows/webhooks/client';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorConfirm, floorPaymentWorkflow } from './floor/workflows';
import { AccountAnswer, apiClient, ProviderAnswer, secretKeyOf, VISA } from './http';
import { drive, round, summarize } from './measure';
import { prepareRoutingScenario, ROUTING_PAYMENTS, routingRows } from './routing';

/**
 * `npm run bench`: brings the stack up the way `npm start` does (Postgres, migrations, a Temporal dev
 * server on a SQLite file, the simulator, a worker and the API as separate processes), then measures
 * each scenario beside its baseline in the same run, and writes bench/results/latest.json.
 * Environment: DATABASE_URL / TEMPORAL_ADDRESS to use running servers; BENCH_PAYMENTS (sequential
 * payments, default 200), BENCH_SECONDS (read duration, default 10), BENCH_SCENARIOS (default all),
 * BENCH_ROUTING_PAYMENTS and BENCH_ROUTING_STRATEGIES (bench/routing.ts).
 * Scenarios not run keep their last numbers in latest.json, under `earlier` the run they come from.
 */
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 200);
const READ_SECONDS = Number(process.env.BENCH_SECONDS ?? 10);
const CONCURRENCY = 16;
const OPEN_PAYMENTS = Number(process.env.BENCH_OPEN_PAYMENTS ?? 1000);
const WEBHOOK_EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 300);
const ALL_SCENARIOS = ['read', 'payment', 'webhooks', 'memory', 'routing'];
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? ALL_SCENARIOS.join(',')).split(','));
const RESULTS_FILE = join(ROOT_DIR, 'bench', 'results', 'latest.json');

const children: ChildProcess[] = [];
const log = (line: string) => process.stdout.write(`${line}\n`);

async function freePort(): Promise<number> {
  const server = netServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

function launch(script: string, env: NodeJS.ProcessEnv, ready: string): Promise<ChildProcess> {
  const proc = spawn(process.execPath, [join(ROOT_DIR, 'dist', script)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(proc);
  return new Promise((resolve, reject) => {
    let out = '';
    let started = !ready;
    if (started) resolve(proc);
    // Keep draining after readiness: a child blocked on a full pipe would distort the numbers.
    const onData = (c: Buffer) => {
      if (started) return;
      out += c.toString();
      if (out.includes(ready)) {
        started = true;
        resolve(proc);
      }
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => reject(new Error(`${script} exited (${code}):\n${out.slice(-2000)}`)));
  });
}

async function waitHttp(url: string): Promise<void> {
  for (let i = 0; i < 150; i++) {
    if (await fetch(url).then((r) => r.ok, () => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

interface PaymentRun extends ReturnType<typeof summarize> {
  confirm_p50_ms: number; confirm_p99_ms: number; floor_per_s: number; floor_p50_ms: number; floor_p99_ms: number; ratio: number;
}

async function main(): Promise<void> {
  const config = loadConfig();
  const scratch = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const stops: (() => Promise<unknown>)[] = [];
  try {
    log('bench: bringing the stack up');
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
      SIMULATOR_URL: `http://127.0.0.1:${simPort}`, JWT_SECRET: config.jwt.secret, VAULT_KEY: config.vaultKey,
      API_KEY_PEPPER: config.apiKeyPepper, SB_DATA_DIR: config.dataDir, RATE_LIMIT_RPS: '0', WEBHOOK_ALLOW_PRIVATE: 'true',
    };
    await launch('simulator/main.js', { ...env, SIMULATOR_PORT: String(simPort) }, '');
    await waitHttp(`http://127.0.0.1:${simPort}/healthz`);
    const worker = await launch('worker/main.js', { ...env, LOG_LEVEL: 'info' }, 'worker started');
    // Request logging on, as in production: the read ratio includes it.
    await launch('api/main.js', { ...env, PORT: String(apiPort), LOG_LEVEL: 'info' }, '');
    await launch('bench/baseline-read.js', { ...env, PORT: String(basePort) }, 'baseline listening');
    await launch('bench/floor/worker.js', env, 'floor worker started');
    const api = `http://127.0.0.1:${apiPort}`;
    await waitHttp(`${api}/healthz`);
    const client = new Client({ connection: await Connection.connect({ address: temporalAddress }) });

    // A merchant with a sandbox-adapter provider config (0 ms processor latency) and a fee.
    const token = signDevToken(config, { user: 'usr_bench', workspace: 'ws_bench' });
    const system = signDevToken(config, { user: 'usr_bench_system', workspace: 'ws_bench', system: true });
    const http = apiClient(api);
    const post = http.post;
    const account = (await post<AccountAnswer>('/accounts', { name: 'Bench', country: 'US', currency: 'USD' }, token)).data;
    const key = secretKeyOf(account);
    const provider = (await post<ProviderAnswer>('/payment-providers', { name: 'Sandbox', identifier: 'sandbox' }, system)).data;
    const ppc = (await post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name: 'Primary', credentials: { api_key: 'bench' } }, token)).data;
    for (const m of provider.methods) {
      await post(`/payment-provider-configs/${ppc.id}/fees`, { payment_provider_method_id: m.id, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' }, token);
    }
    let confirmLatencies: number[] = [];
    const payOnce = async () => {
      const payment = (await post('/payments', { amount: 1000, currency: 'USD' }, key)).data;
      const t0 = performance.now();
      const confirmed = (await post(`/payments/${payment.id}/confirm`, { payment_method: VISA }, key)).data;
      confirmLatencies.push(performance.now() - t0);
      if (confirmed.status !== 'SUCCEEDED') throw new Error(`payment ended ${confirmed.status}`);
      return payment.id;
    };
    let floorSeq = 0;
    const floorOnce = async () => {
      const handle = await client.workflow.start(floorPaymentWorkflow, { taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor/${Date.now()}/${floorSeq++}` });
      await handle.executeUpdate(floorConfirm);
    };

    log('bench: warming up');
    await drive(30, 4, async () => { await payOnce(); });
    await drive(30, 4, floorOnce);
    // Set up now so that a build without adaptive routing fails before the other scenarios, not after them.
    const routingScenario = SCENARIOS.has('routing') ? await prepareRoutingScenario({ api: http, token, provider, log }) : undefined;

    let read: Record<string, number> | undefined;
    if (SCENARIOS.has('read')) {
    log('bench: read');
    const paymentId = await payOnce();
    const cannon = (target: string, headers: Record<string, string> = {}) => autocannon({ url: target, connections: 32, duration: READ_SECONDS, headers });
    await cannon(`${api}/v1/payments/${paymentId}`, { authorization: `Bearer ${key}` }).then(() => undefined);
    const ours = await cannon(`${api}/v1/payments/${paymentId}`, { authorization: `Bearer ${key}` });
    const base = await cannon(`http://127.0.0.1:${basePort}/payments/${paymentId}`);
    if (ours.non2xx || ours.errors) throw new Error(`read: ${ours.non2xx} non-2xx, ${ours.errors} errors`);
    read = { rps: round(ours.requests.average), p99_ms: ours.latency.p99, baseline_rps: round(base.requests.average), baseline_p99_ms: base.latency.p99, ratio: round(ours.requests.average / base.requests.average) };
    }

    // payments
    const payment: Partial<Record<'c1' | 'c16', PaymentRun>> = {};
    for (const [name, concurrency, total] of SCENARIOS.has('payment') ? [['c1', 1, PAYMENTS], ['c16', CONCURRENCY, PAYMENTS * 2]] as const : []) {
      log(`bench: payments ${name}`);
      confirmLatencies = [];
      const ourRun = await drive(total, concurrency, async () => { await payOnce(); });
      const confirms = summarize(confirmLatencies, ourRun.elapsedMs);
      const floorRun = await drive(total, concurrency, floorOnce);
      const o = summarize(ourRun.latencies, ourRun.elapsedMs);
      const fl = summarize(floorRun.latencies, floorRun.elapsedMs);
      payment[name] = {
        ...o, confirm_p50_ms: confirms.p50_ms, confirm_p99_ms: confirms.p99_ms,
        floor_per_s: fl.per_s, floor_p50_ms: fl.p50_ms, floor_p99_ms: fl.p99_ms, ratio: round(o.per_s / fl.per_s),
      };
    }

    let webhooks: Record<string, number> | undefined;
    if (SCENARIOS.has('webhooks')) {
    log('bench: webhooks');
    let received = 0;
    let allReceived: () => void = () => {};
    const done = new Promise<void>((r) => { allReceived = r; });
    const receiver: Server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
        if (body.type === 'webhook_endpoint.verification') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ challenge: body.data.challenge }));
          return;
        }
        res.end('ok');
        if (++received === WEBHOOK_EVENTS) allReceived();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const endpoint = (await post('/webhook-endpoints', { url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`, events: ['*'] }, key)).data;
    for (let i = 0; i < 100; i++) {
      const ep = await http.get(`/webhook-endpoints/${endpoint.id}`, key);
      if (ep.data.status === 'enabled') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const eventIds = await appendEvents(db, 'production', Array.from({ length: WEBHOOK_EVENTS }, (_, i) => ({
      event: 'payment_intent.succeeded', accountId: account.id, workspaceId: account.workspace_id, data: { object: { object: 'payment', n: i } },
    })));
    const t0 = performance.now();
    await webhookClient(client).startFanOut('production', eventIds, `bench-fan-out/${Date.now()}`);
    await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`webhooks: ${received}/${WEBHOOK_EVENTS} after 120 s`)), 120_000))]);
    webhooks = { per_s: round(WEBHOOK_EVENTS / ((performance.now() - t0) / 1000)), deliveries: WEBHOOK_EVENTS };
    receiver.close();
    }

    let memory: Record<string, number> | undefined;
    if (SCENARIOS.has('memory')) {
    log(`bench: memory with ${OPEN_PAYMENTS} open payments`);
    await drive(OPEN_PAYMENTS, CONCURRENCY, async () => { await post('/payments', { amount: 500, currency: 'USD' }, key); });
    await new Promise((r) => setTimeout(r, 2000));
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${worker.pid}/status`, 'utf8'))?.[1] ?? 0);
    memory = { worker_rss_mb: round(rssKb / 1024), open_payments: OPEN_PAYMENTS, max_cached_workflows: config.workerMaxCachedWorkflows };
    }

    let routing: Awaited<ReturnType<NonNullable<typeof routingScenario>['run']>> | undefined;
    if (routingScenario) {
      log(`bench: routing, ${ROUTING_PAYMENTS} payments per strategy`);
      routing = await routingScenario.run();
    }

    const measured: Record<string, unknown> = { read, payment: SCENARIOS.has('payment') ? payment : undefined, webhooks, memory, routing };
    // Scenarios this run left out keep their numbers, with the run they come from under `earlier`.
    const previous: Record<string, unknown> & { earlier?: Record<string, unknown> } = existsSync(RESULTS_FILE) ? JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) : {};
    const kept = ALL_SCENARIOS.filter((name) => measured[name] === undefined && previous[name] !== undefined);
    const earlier = Object.fromEntries(kept.map((name) => [name, previous.earlier?.[name] ?? { at: previous.at, machine: previous.machine }]));
    const results = {
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gb: round(totalmem() / 2 ** 30), node: process.version },
      ...(kept.length ? { earlier } : {}),
      ...Object.fromEntries(ALL_SCENARIOS.map((name) => [name, measured[name] ?? previous[name]])),
    };
    mkdirSync(join(ROOT_DIR, 'bench', 'results'), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
    const row = (name: string, ours: string, theirs: string, ratio: unknown) => log(`${name.padEnd(16)}${ours.padEnd(36)}${theirs.padEnd(36)}${ratio}`);
    log('');
    if (read || payment.c1 || payment.c16 || webhooks || memory) row('scenario', 'ours', 'baseline / floor', 'ratio');
    if (read) row('read (32 conn)', `${read.rps} req/s, p99 ${read.p99_ms} ms`, `${read.baseline_rps} req/s, p99 ${read.baseline_p99_ms} ms`, read.ratio);
    for (const c of ['c1', 'c16'] as const) {
      const run = payment[c];
      if (run) row(`payment ${c}`, `${run.per_s}/s, p50 ${run.p50_ms}, p99 ${run.p99_ms} ms`, `${run.floor_per_s}/s, p50 ${run.floor_p50_ms}, p99 ${run.floor_p99_ms} ms`, run.ratio);
    }
    if (webhooks) row('webhooks', `${webhooks.per_s} deliveries/s`, '', '');
    if (memory) row('memory', `worker RSS ${memory.worker_rss_mb} MB`, `${OPEN_PAYMENTS} open payments`, '');
    if (routing) {
      log('');
      for (const line of routingRows(routing)) log(line);
    }
    await client.connection.close();
  } finally {
    for (const child of children.reverse()) if (child.exitCode === null) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
}

main().then(() => process.exit(0), (err) => {
  console.error('bench failed:', err instanceof TemporalCliMissing ? err.message : err);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
});
