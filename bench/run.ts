import { ChildProcess, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { AddressInfo, createServer as netServer } from 'node:net';
import { randomUUID } from 'node:crypto';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { Client, Connection, WithStartWorkflowOperation } from '@temporalio/client';
import { loadConfig, ROOT_DIR } from '../db/local-state';
import { startLocalTemporal, TemporalCliMissing } from '../scripts/local-temporal';
import { ensureTemporalCli } from '../scripts/temporal-cli';
import { signDevToken } from '../lib/tokens';
import { workerNodeArgs } from '../lib/config';
import { createDb, migrate } from '../db/knex';
import { startEmbeddedPostgres } from '../db/embedded';
import { appendEvents } from '../db/events';
import { webhookClient } from '../workflows/webhooks/client';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorConfirm, floorDeliveryWorkflow, floorPaymentWorkflow } from './floor/workflows';
import { AccountAnswer, apiClient, ProviderAnswer, secretKeyOf, VISA } from './http';
import { cpuMs, drive, medianOf, Repeated, round, summarize } from './measure';
import { runListScenario } from './list';
import { prepareRoutingScenario, ROUTING_PAYMENTS, routingRows } from './routing';

/**
 * `npm run bench`: brings the stack up the way `npm start` does (Postgres, migrations, a Temporal dev
 * server on a SQLite file, the simulator, a worker and the API as separate processes), then measures
 * each scenario beside its baseline in the same run, BENCH_RUNS times (default 3), and writes every
 * run and the median of each number to bench/results/latest.json (docs/performance.md#scenarios).
 * Environment: DATABASE_URL / TEMPORAL_ADDRESS to use running servers; BENCH_SCENARIOS (default
 * read,payment,webhooks,memory,list,overhead; `routing` on request), BENCH_RUNS, BENCH_PAYMENTS
 * (sequential payments per run, default 60; c16 runs four times as many), BENCH_SECONDS (read duration per
 * run, default 6), BENCH_WEBHOOK_EVENTS (per run and side, default 300), BENCH_OPEN_PAYMENTS (default 10,000),
 * BENCH_LIST_* (bench/list.ts), BENCH_ROUTING_* (bench/routing.ts), BENCH_NODE_ARGS (node flags for the
 * processes it starts, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * Scenarios not run keep their last numbers in latest.json, under `earlier` the run they come from.
 */
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 60);
const READ_SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
/** Each read run alternates its sides in this many slices (see readInTurns). */
const READ_SLICES = 3;
/** Each payment run alternates its sides in this many slices (the c16 runs: PAYMENTS × 4 a side). */
const PAYMENT_SLICES = 4;
const CONCURRENCY = 16;
const OPEN_PAYMENTS = Number(process.env.BENCH_OPEN_PAYMENTS ?? 10_000);
const WEBHOOK_EVENTS = Number(process.env.BENCH_WEBHOOK_EVENTS ?? 300);
const WEBHOOK_SLICES = 4;
const ALL_SCENARIOS = ['read', 'payment', 'webhooks', 'memory', 'list', 'overhead', 'routing'];
const DEFAULT_SCENARIOS = ALL_SCENARIOS.filter((s) => s !== 'routing');
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? DEFAULT_SCENARIOS.join(',')).split(','));
const RESULTS_FILE = join(ROOT_DIR, 'bench', 'results', 'latest.json');
/** The targets of docs/performance.md, printed beside the medians. */
const TARGETS = { payment: '≥ 0.8', read: '≥ 0.8', memory: '≤ 500 MB', list: 'p99 ≤ 50 ms', webhooks: '≥ 0.8' };

const children: ChildProcess[] = [];
const log = (line: string) => process.stdout.write(`${line}\n`);

async function freePort(): Promise<number> {
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
function launch(script: string, env: NodeJS.ProcessEnv, ready: string, args: string[] = []): Promise<ChildProcess> {
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
async function sink(onRequest: (req: IncomingMessage, body: string, res: ServerResponse) => void = (_req, _body, res) => res.end('ok')): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => onRequest(req, Buffer.concat(chunks).toString(), res));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Runs `measure` RUNS times, one after the other; every run and the median of each number. */
async function repeat<T extends Record<string, number>>(name: string, measure: (run: number) => Promise<T>): Promise<Repeated<T>> {
  const runs: T[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`bench: ${name}, run ${run}/${RUNS}`);
    runs.push(await measure(run));
  }
  return { runs, median: medianOf(runs) };
}

/** Pids of the processes whose command name is `comm` (the Temporal server, Postgres's backends), when they run on this machine. */
const pidsNamed = (comm: string) => readdirSync('/proc').filter((entry) => /^\d+$/.test(entry)).filter((pid) => {
  try {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === comm;
  } catch {
    return false; // gone meanwhile
  }
}).map(Number);

const rssMb = (pid: number) => round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024);

async function main(): Promise<void> {
  const config = loadConfig();
  const scratch = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  logDir = join(scratch, 'logs');
  mkdirSync(logDir);
  const stops: (() => Promise<unknown>)[] = [];
  const started = performance.now();
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
      SIMULATOR_URL: `http://127.0.0.1:${simPort}`, JWT_SECRET: config.jwt.secret, VAULT_KEYS: config.vaultKeys,
      API_KEY_PEPPER: config.apiKeyPepper, SB_DATA_DIR: config.dataDir, WEBHOOK_ALLOW_PRIVATE: 'true',
      // The per-credential limit stays on, as shipped (its counting and headers are part of every read),
      // set above any rate a scenario drives from its one key.
      RATE_LIMIT_RPS: '1000000',
    };
    const simProc = await launch('simulator/main.js', { ...env, SIMULATOR_PORT: String(simPort) }, '');
    await waitHttp(`http://127.0.0.1:${simPort}/healthz`);
    // Started as npm start and the image start it: with the main thread's heap limit (WORKER_HEAP_MB).
    const worker = await launch('worker/main.js', { ...env, LOG_LEVEL: 'info' }, 'worker started', workerNodeArgs(config));
    // Request logging on, as in production: the read ratio includes it.
    const apiProc = await launch('api/main.js', { ...env, PORT: String(apiPort), LOG_LEVEL: 'info' }, '');
    const baseProc = await launch('bench/baseline-read.js', { ...env, PORT: String(basePort) }, 'baseline listening');
    const floorWorker = await launch('bench/floor/worker.js', env, 'floor worker started');
    const api = `http://127.0.0.1:${apiPort}`;
    await waitHttp(`${api}/healthz`);
    const client = new Client({ connection: await Connection.connect({ address: temporalAddress }) });

    // A merchant with a sandbox-adapter provider config (0 ms processor latency) and a fee.
    const token = signDevToken(config, { user: 'usr_bench', workspace: 'ws_bench' });
    const system = signDevToken(config, { user: 'usr_bench_system', system: true });
    const http = apiClient(api);
    const post = http.post;
    const account = (await post<AccountAnswer>('/accounts', { name: 'Bench', country: 'US', currency: 'USD' }, token)).data;
    const key = secretKeyOf(account);
    const provider = (await post<ProviderAnswer>('/payment-providers', { name: 'Sandbox', identifier: 'sandbox' }, system)).data;
    const ppc = (await post(`/payment-provider-configs?account_id=${account.id}`, { payment_provider_id: provider.id, name: 'Primary', credentials: { api_key: 'bench' } }, token)).data;
    for (const m of provider.methods) {
      await post(`/payment-provider-configs/${ppc.id}/fees`, { payment_provider_method_id: m.id, volume_fee: 2.9, fixed_fee: 30, fixed_fee_currency: 'USD' }, token);
    }
    // A payment as a merchant's checkout makes one: create and confirm in one request.
    const payOnce = async () => {
      const payment = (await post('/payments', { amount: 1000, currency: 'USD', confirm: true, payment_method: VISA }, key)).data;
      if (payment.status !== 'SUCCEEDED') throw new Error(`payment ended ${payment.status}`);
      return payment.id;
    };
    let floorSeq = 0;
    // The floor makes its start and update in one call, as our create with confirm does.
    const floorOnce = async () => {
      await client.workflow.executeUpdateWithStart(floorConfirm, {
        startWorkflowOperation: new WithStartWorkflowOperation(floorPaymentWorkflow, {
          taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor/${Date.now()}/${floorSeq++}`, workflowIdConflictPolicy: 'FAIL',
        }),
      });
    };

    log('bench: warming up');
    await drive(30, 4, async () => { await payOnce(); });
    await drive(30, 4, floorOnce);
    // Set up now so that a build without adaptive routing fails before the other scenarios, not after them.
    const routingScenario = SCENARIOS.has('routing') ? await prepareRoutingScenario({ api: http, token, provider, log }) : undefined;
    const paymentId = await payOnce();
    const cannon = async (target: string, headers: Record<string, string> = {}, seconds = READ_SECONDS) => {
      const result = await autocannon({ url: target, connections: 32, duration: seconds, headers });
      if (result.non2xx || result.errors) throw new Error(`${target}: ${result.non2xx} non-2xx (${JSON.stringify(result.statusCodeStats)}), ${result.errors} errors`);
      return result;
    };
    const readPath = `/v1/payments/${paymentId}`;
    /**
     * Reads each server in turns, `slices` slices (default READ_SLICES) of READ_SECONDS / READ_SLICES each
     * (the order reversed every other slice), so that every side sees the same machine: on a shared 2-core VM one
     * side measured a minute after the other moved the ratio by ±0.2. Per side: requests per second over
     * its slices, the worst slice's p99, and the CPU its server process spent per answered request (what
     * the sides compete on; a throughput ratio also moves with the share Postgres and the load generator take).
     */
    const readInTurns = async (sides: { url: string; pid: number; headers?: Record<string, string> }[], slices = READ_SLICES, sliceSeconds = READ_SECONDS / READ_SLICES) => {
      const totals = sides.map(() => ({ requests: 0, seconds: 0, cpuMs: 0, p99: 0 }));
      for (let slice = 0; slice < slices; slice++) {
        const order = sides.map((_, i) => i);
        if (slice % 2) order.reverse();
        for (const i of order) {
          const before = cpuMs(sides[i].pid);
          const result = await cannon(sides[i].url, sides[i].headers, sliceSeconds);
          const total = totals[i];
          total.cpuMs += cpuMs(sides[i].pid) - before;
          total.requests += result.requests.total;
          total.seconds += result.duration;
          total.p99 = Math.max(total.p99, result.latency.p99);
        }
      }
      return totals.map((t) => ({ rps: round(t.requests / t.seconds), p99_ms: t.p99, cpu_us: round((t.cpuMs * 1000) / t.requests) }));
    };
    const bearer = { authorization: `Bearer ${key}` };

    const measured: Record<string, unknown> = {};
    // Where the bench's time goes (it is to stay under ten minutes): the stack and warm-up, then each scenario.
    const secondsOf: Record<string, number> = {};
    let lapAt = started;
    const lap = (name: string) => {
      const now = performance.now();
      secondsOf[name] = round((now - lapAt) / 1000);
      lapAt = now;
    };
    lap('setup');
    if (SCENARIOS.has('read')) {
      const sides = [
        { url: `${api}${readPath}`, pid: apiProc.pid!, headers: bearer },
        { url: `http://127.0.0.1:${basePort}/payments/${paymentId}`, pid: baseProc.pid! },
      ];
      // Both warmed up first (the baseline's first run used to be its slowest, flattering ours).
      for (const side of sides) await cannon(side.url, side.headers);
      measured.read = await repeat('read', async () => {
        const [ours, base] = await readInTurns(sides);
        return {
          rps: ours.rps, p99_ms: ours.p99_ms, baseline_rps: base.rps, baseline_p99_ms: base.p99_ms, ratio: round(ours.rps / base.rps),
          cpu_us_per_request: ours.cpu_us, baseline_cpu_us_per_request: base.cpu_us,
        };
      });
      lap('read');
    }

    if (SCENARIOS.has('payment')) {
      const payment: Record<string, Repeated<Record<string, number>>> = {};
      // Where a payment's CPU goes, per process (what the sides compete for on a shared machine): each
      // process's CPU time over the side's run, divided by its payments. The Temporal server and
      // Postgres are counted when they run here (a remote one counts 0); Postgres is ours alone.
      const ours = {
        worker: () => [worker.pid!], api: () => [apiProc.pid!], simulator: () => [simProc.pid!],
        temporal: () => pidsNamed('temporal'), postgres: () => pidsNamed('postgres'), driver: () => [process.pid],
      };
      const floor = { worker: () => [floorWorker.pid!], temporal: ours.temporal, driver: ours.driver };
      /** Each process's CPU (ms) from now on: call the answer to read it. */
      const cpuSince = (processes: Record<string, () => number[]>) => {
        const cpuByPid = (pids: number[]) => new Map(pids.flatMap((pid) => {
          try {
            return [[pid, cpuMs(pid)] as const];
          } catch {
            return []; // gone meanwhile
          }
        }));
        const before = Object.fromEntries(Object.entries(processes).map(([name, pids]) => [name, cpuByPid(pids())]));
        return (): Record<string, number> => Object.fromEntries(Object.entries(processes).map(([name, pids]) => {
          let ms = 0;
          for (const [pid, now] of cpuByPid(pids())) ms += now - (before[name].get(pid) ?? 0);
          return [name, ms];
        }));
      };
      /** One side's share of a run: its payments' latencies, its time driving them, and each process's CPU. */
      interface Side { latencies: number[]; elapsedMs: number; cpu: Record<string, number>; payments: number }
      const newSide = (): Side => ({ latencies: [], elapsedMs: 0, cpu: {}, payments: 0 });
      const slice = async (side: Side, processes: Record<string, () => number[]>, payments: number, concurrency: number, op: () => Promise<unknown>) => {
        const cpu = cpuSince(processes);
        const run = await drive(payments, concurrency, async () => { await op(); });
        for (const [name, ms] of Object.entries(cpu())) side.cpu[name] = (side.cpu[name] ?? 0) + ms;
        side.latencies.push(...run.latencies);
        side.elapsedMs += run.elapsedMs;
        side.payments += payments;
      };
      const perPayment = (side: Side) => {
        const ms = Object.fromEntries(Object.entries(side.cpu).map(([name, total]) => [name, round(total / side.payments)]));
        return { ...ms, total: round(Object.values(side.cpu).reduce((sum, total) => sum + total, 0) / side.payments) };
      };
      for (const [name, concurrency, total] of [['c1', 1, PAYMENTS], ['c16', CONCURRENCY, PAYMENTS * 4]] as const) {
        // Each side warmed at this concurrency first: the first run at 16 otherwise opened some twenty
        // Postgres connections (a backend started, its caches filled, each), which the floor has none of
        // and which steady traffic does not pay — the pools had reaped them, idle, during the runs at 1.
        log(`bench: payments ${name}, warming up`);
        await drive(concurrency * 2, concurrency, async () => { await payOnce(); });
        await drive(concurrency * 2, concurrency, floorOnce);
        payment[name] = await repeat(`payments ${name}`, async () => {
          // The sides in turns, PAYMENT_SLICES slices each, the order reversed every other slice: this
          // machine's speed moves within seconds, and one side's whole run after the other's read that as
          // a difference between them (as the read's runs did; see readInTurns).
          const [o, f] = [newSide(), newSide()];
          const perSlice = Math.ceil(total / PAYMENT_SLICES);
          for (let i = 0; i < PAYMENT_SLICES; i++) {
            const turns = [() => slice(o, ours, perSlice, concurrency, payOnce), () => slice(f, floor, perSlice, concurrency, floorOnce)];
            for (const turn of i % 2 ? turns.reverse() : turns) await turn();
          }
          const [ourRun, floorRun] = [summarize(o.latencies, o.elapsedMs), summarize(f.latencies, f.elapsedMs)];
          return {
            ...ourRun, floor_per_s: floorRun.per_s, floor_p50_ms: floorRun.p50_ms, floor_p99_ms: floorRun.p99_ms, ratio: round(ourRun.per_s / floorRun.per_s),
            ...Object.fromEntries(Object.entries(perPayment(o)).map(([process, ms]) => [`cpu_ms_${process}`, ms])),
            ...Object.fromEntries(Object.entries(perPayment(f)).map(([process, ms]) => [`floor_cpu_ms_${process}`, ms])),
          };
        });
      }
      measured.payment = payment;
      lap('payment');
    }

    if (SCENARIOS.has('webhooks')) {
      let received = 0;
      let expected = 0;
      let allReceived: () => void = () => {};
      const receiver = await sink((_req, raw, res) => {
        const body = JSON.parse(raw || '{}');
        if (body.type === 'webhook_endpoint.verification') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ challenge: body.data.challenge }));
          return;
        }
        res.end('ok');
        if (++received === expected) allReceived();
      });
      const endpoint = (await post('/webhook-endpoints', { url: `${receiver.url}/hook`, events: ['*'] }, key)).data;
      for (let i = 0; i < 100; i++) {
        const ep = await http.get(`/webhook-endpoints/${endpoint.id}`, key);
        if (ep.data.status === 'enabled') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      /** Resolves with the milliseconds until `count` requests reached the receiver after `start`. */
      const timed = async (count: number, start: () => Promise<unknown>) => {
        received = 0;
        expected = count;
        const done = new Promise<void>((r) => { allReceived = r; });
        const t0 = performance.now();
        await start();
        await Promise.race([done, new Promise((_, reject) => setTimeout(() => reject(new Error(`webhooks: ${received}/${count} after 120 s`)), 120_000))]);
        return performance.now() - t0;
      };
      const ours = (count: number) => timed(count, async () => {
        const eventIds = await appendEvents(db, 'production', Array.from({ length: count }, (_, i) => ({
          event: 'payment_intent.succeeded', accountId: account.id, workspaceId: account.workspace_id, data: { object: { object: 'payment', n: i } },
        })));
        await webhookClient(client).startFanOut('production', eventIds, `bench-fan-out/${randomUUID()}`);
      });
      // The floor: one workflow and one HTTP activity per delivery, started in batches of 20 as the fan-out does.
      const floor = (count: number) => timed(count, async () => {
        const batch = randomUUID();
        for (let i = 0; i < count; i += 20) {
          await Promise.all(Array.from({ length: Math.min(20, count - i) }, (_, j) => client.workflow.start(floorDeliveryWorkflow, {
            taskQueue: FLOOR_TASK_QUEUE, workflowId: `floor-delivery/${batch}/${i + j}`, args: [`${receiver.url}/floor`, i + j],
          })));
        }
      });
      measured.webhooks = await repeat('webhooks', async () => {
        // The sides in turns, WEBHOOK_SLICES slices each, the order reversed every other slice (as the
        // payment runs): each side's deliveries per second over its slices.
        const perSlice = Math.ceil(WEBHOOK_EVENTS / WEBHOOK_SLICES);
        const ms = { ours: 0, floor: 0 };
        for (let i = 0; i < WEBHOOK_SLICES; i++) {
          const turns = [async () => { ms.ours += await ours(perSlice); }, async () => { ms.floor += await floor(perSlice); }];
          for (const turn of i % 2 ? turns.reverse() : turns) await turn();
        }
        const deliveries = perSlice * WEBHOOK_SLICES;
        const perS = round(deliveries / (ms.ours / 1000));
        const floorPerS = round(deliveries / (ms.floor / 1000));
        return { per_s: perS, floor_per_s: floorPerS, deliveries, ratio: round(perS / floorPerS) };
      });
      // Later scenarios create payments whose events would otherwise be delivered here too.
      await http.delete(`/webhook-endpoints/${endpoint.id}`, key);
      receiver.server.close();
      lap('webhooks');
    }

    if (SCENARIOS.has('memory')) {
      log(`bench: memory, creating ${OPEN_PAYMENTS} open payments`);
      const t0 = performance.now();
      await drive(OPEN_PAYMENTS, 32, async () => { await post('/payments', { amount: 500, currency: 'USD' }, key); });
      log(`bench: ${OPEN_PAYMENTS} open payments in ${round((performance.now() - t0) / 1000)} s`);
      // One set of open payments, sampled RUNS times 5 s apart: the worker's resident memory once they are all waiting.
      measured.memory = await repeat('memory', async () => {
        await new Promise((r) => setTimeout(r, 5000));
        return { worker_rss_mb: rssMb(worker.pid!), open_payments: OPEN_PAYMENTS, max_cached_workflows: config.workerMaxCachedWorkflows };
      });
      lap('memory');
    }

    if (SCENARIOS.has('list')) {
      const list = await runListScenario({ db, databaseUrl, api, apiPid: apiProc.pid!, key, account, log, runs: RUNS });
      measured.list = { payments: list.payments, runs: list.runs, median: medianOf(list.runs) };
      lap('list');
    }

    if (SCENARIOS.has('overhead')) {
      // Each per-request layer on and off. Metrics and logging: the API as shipped and the same API with
      // that layer off, two apps in one process (bench/api-variant.ts), read in turns — two processes of the
      // same code differ by ±5 % of their CPU per read here, more than a layer costs. Tracing is a
      // process's setting: the shipped API against a process with spans over OTLP to a local sink.
      const collector = await sink();
      const overhead: Record<string, Repeated<Record<string, number>>> = {};
      const variantSide = async (variantEnv: NodeJS.ProcessEnv, layerPorts: Record<string, number> = {}) => {
        const port = await freePort();
        const proc = await launch('bench/api-variant.js', { ...env, LOG_LEVEL: 'info', ...variantEnv, PORT: String(port), BENCH_LAYER_PORTS: JSON.stringify(layerPorts) }, 'api variant listening');
        const side = (p: number) => ({ url: `http://127.0.0.1:${p}${readPath}`, pid: proc.pid!, headers: bearer });
        return { proc, shipped: side(port), layers: Object.fromEntries(Object.entries(layerPorts).map(([layer, p]) => [layer, side(p)])) };
      };
      const compare = async (name: string, shipped: { url: string; pid: number; headers?: Record<string, string> }, variant: typeof shipped) => {
        // A fresh app: one slice's worth of requests warms it up.
        await cannon(variant.url, bearer, READ_SECONDS / READ_SLICES);
        overhead[name] = await repeat(`overhead: shipped vs ${name.replace('_', ' ')}`, async () => {
          // Four 1-s slices a side (each order twice): the layers are reported, not held to a target, and
          // the bench is to stay under ten minutes.
          const [ours, other] = await readInTurns([shipped, variant], 4, 1);
          return {
            shipped_rps: ours.rps, variant_rps: other.rps, shipped_cpu_us: ours.cpu_us, variant_cpu_us: other.cpu_us,
            // What the layer costs the shipped API (metrics, logging), or what tracing adds to it.
            cost: round(name === 'tracing_on' ? 1 - other.rps / ours.rps : 1 - ours.rps / other.rps),
            cpu_cost: round(name === 'tracing_on' ? other.cpu_us / ours.cpu_us - 1 : 1 - other.cpu_us / ours.cpu_us),
          };
        });
      };
      const layered = await variantSide({}, { metrics_off: await freePort(), logging_off: await freePort() });
      await cannon(layered.shipped.url, bearer, READ_SECONDS / READ_SLICES);
      for (const [name, side] of Object.entries(layered.layers)) await compare(name, layered.shipped, side);
      await new Promise((resolve) => { layered.proc.once('exit', resolve); layered.proc.kill('SIGTERM'); });
      const traced = await variantSide({ OTEL_EXPORTER_OTLP_ENDPOINT: collector.url });
      await compare('tracing_on', { url: `${api}${readPath}`, pid: apiProc.pid!, headers: bearer }, traced.shipped);
      await new Promise((resolve) => { traced.proc.once('exit', resolve); traced.proc.kill('SIGTERM'); });
      measured.overhead = overhead;
      collector.server.close();
      lap('overhead');
    }

    if (routingScenario) {
      log(`bench: routing, ${ROUTING_PAYMENTS} payments per strategy`);
      measured.routing = await routingScenario.run();
      lap('routing');
    }

    // Scenarios this run left out keep their numbers, with the run they come from under `earlier`.
    const previous: Record<string, unknown> & { earlier?: Record<string, unknown> } = existsSync(RESULTS_FILE) ? JSON.parse(readFileSync(RESULTS_FILE, 'utf8')) : {};
    const kept = ALL_SCENARIOS.filter((name) => measured[name] === undefined && previous[name] !== undefined);
    const earlier = Object.fromEntries(kept.map((name) => [name, previous.earlier?.[name] ?? { at: previous.at, machine: previous.machine }]));
    const results = {
      at: new Date().toISOString(),
      machine: { cpus: cpus().length, cpu: cpus()[0]?.model, memory_gb: round(totalmem() / 2 ** 30), node: process.version },
      runs_per_scenario: RUNS,
      seconds: round((performance.now() - started) / 1000),
      seconds_by_scenario: secondsOf,
      ...(kept.length ? { earlier } : {}),
      ...Object.fromEntries(ALL_SCENARIOS.map((name) => [name, measured[name] ?? previous[name]])),
    };
    mkdirSync(join(ROOT_DIR, 'bench', 'results'), { recursive: true });
    writeFileSync(RESULTS_FILE, `${JSON.stringify(results, null, 2)}\n`);
    for (const line of table(measured)) log(line);
    if (measured.routing) {
      log('');
      for (const line of routingRows(measured.routing as Parameters<typeof routingRows>[0])) log(line);
    }
    log(`\nbench: ${results.seconds} s in all (${Object.entries(secondsOf).map(([name, s]) => `${name} ${s}`).join(', ')})`);
    await client.connection.close();
  } finally {
    for (const child of children.reverse()) if (child.exitCode === null) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The printed table: each scenario's median beside its target, and the runs it is the median of. */
function table(measured: Record<string, unknown>): string[] {
  const lines = ['', `${'scenario'.padEnd(16)}${'median'.padEnd(58)}${'target'.padEnd(14)}runs`];
  const row = (name: string, median: string, target: string, runs: string) => lines.push(`${name.padEnd(16)}${median.padEnd(58)}${target.padEnd(14)}${runs}`);
  const runsOf = (r: Repeated<Record<string, number>>, field: string) => r.runs.map((x) => x[field]).join(' / ');
  const read = measured.read as Repeated<Record<string, number>> | undefined;
  if (read) row('read (32 conn)', `${read.median.rps} req/s vs ${read.median.baseline_rps} bare → ${read.median.ratio}`, TARGETS.read, runsOf(read, 'ratio'));
  if (read?.median.cpu_us_per_request) row('read CPU', `${read.median.cpu_us_per_request} µs vs ${read.median.baseline_cpu_us_per_request} µs bare per request`, '', runsOf(read, 'cpu_us_per_request'));
  const payment = measured.payment as Record<string, Repeated<Record<string, number>>> | undefined;
  for (const c of ['c1', 'c16'] as const) {
    const run = payment?.[c];
    if (run) row(`payment ${c}`, `${run.median.per_s}/s (p50 ${run.median.p50_ms} ms) vs floor ${run.median.floor_per_s}/s → ${run.median.ratio}`, TARGETS.payment, runsOf(run, 'ratio'));
    if (run?.median.cpu_ms_total) {
      row(`payment ${c} CPU`, `${run.median.cpu_ms_total} ms vs floor ${run.median.floor_cpu_ms_total} ms per payment`, '', runsOf(run, 'cpu_ms_total'));
      const processes = ['worker', 'api', 'temporal', 'postgres', 'simulator', 'driver'];
      row('', processes.map((p) => `${p} ${run.median[`cpu_ms_${p}`]}${run.median[`floor_cpu_ms_${p}`] !== undefined ? `/${run.median[`floor_cpu_ms_${p}`]}` : ''}`).join(', '), '', '');
    }
  }
  const webhooks = measured.webhooks as Repeated<Record<string, number>> | undefined;
  if (webhooks) row('webhooks', `${webhooks.median.per_s}/s vs floor ${webhooks.median.floor_per_s}/s → ${webhooks.median.ratio}`, TARGETS.webhooks, runsOf(webhooks, 'ratio'));
  const memory = measured.memory as Repeated<Record<string, number>> | undefined;
  if (memory) row('memory', `worker RSS ${memory.median.worker_rss_mb} MB, ${memory.median.open_payments} open payments`, TARGETS.memory, runsOf(memory, 'worker_rss_mb'));
  const list = measured.list as (Repeated<Record<string, number>> & { payments: number }) | undefined;
  if (list) row('list', `p99 ${list.median.p99_ms} ms, p50 ${list.median.p50_ms} ms, ${list.median.rps} req/s (${list.payments} payments)`, TARGETS.list, runsOf(list, 'p99_ms'));
  if (list?.median.api_cpu_us_per_page) row('list CPU', `API ${list.median.api_cpu_us_per_page} µs per page of 100`, '', runsOf(list, 'api_cpu_us_per_page'));
  if (list?.median.first_page_p99_ms) row('list first', `p99 ${list.median.first_page_p99_ms} ms of a walk's first pages (${list.median.first_page_share} of requests; each also counts)`, '', runsOf(list, 'first_page_p99_ms'));
  const overhead = measured.overhead as Record<string, Repeated<Record<string, number>>> | undefined;
  for (const [name, layer] of Object.entries(overhead ?? {})) {
    const m = layer.median;
    const what = name === 'tracing_on' ? 'tracing adds' : `${name.replace('_off', '')} costs`;
    row(name.replace('_', ' '), `${what} ${m.cost} of read throughput, ${m.cpu_cost} of its CPU (shipped ${m.shipped_rps} req/s, ${m.shipped_cpu_us} µs; ${name.replace('_', ' ')} ${m.variant_rps} req/s, ${m.variant_cpu_us} µs)`, '', runsOf(layer, 'cost'));
  }
  return lines;
}

main().then(() => process.exit(0), (err) => {
  console.error('bench failed:', err instanceof TemporalCliMissing ? err.message : err);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
});
