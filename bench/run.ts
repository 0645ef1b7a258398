import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../db/local-state';
import { TemporalCliMissing } from '../scripts/local-temporal';
import { drive, medianOf, round } from './measure';
import { runListScenario } from './list';
import { prepareMerchant, type Merchant } from './merchant';
import { paymentScenario } from './payment';
import { overheadScenario, readScenario } from './read';
import { ALL_SCENARIOS, table, writeResults } from './results';
import { prepareRoutingScenario, ROUTING_PAYMENTS, routingRows } from './routing';
import { log, repeat, RUNS } from './runs';
import { children, rssMb, startStack, type Stack } from './stack';
import { webhooksScenario } from './webhooks';
import { checkoutScenario } from './checkout';
import { disputesScenario } from './disputes';
import { billingScenario } from './billing';

/**
 * `npm run bench`: brings the stack up the way `npm start` does (Postgres, migrations, a Temporal dev
 * server on a SQLite file, the simulator, a worker and the API as separate processes), then measures
 * each scenario beside its baseline in the same run, BENCH_RUNS times (default 3), and writes every
 * run and the median of each number to bench/results/latest.json (docs/performance.md#scenarios).
 * Environment: DATABASE_URL / TEMPORAL_ADDRESS to use running servers; BENCH_SCENARIOS (default
 * read,payment,webhooks,disputes,memory,list,overhead,checkout,billing; `routing` on request), BENCH_RUNS, BENCH_PAYMENTS
 * (sequential payments per run of the realistic payment line, default 60; c16 runs four times as many; the plain
 * line half of each), BENCH_SECONDS (read duration per
 * run, default 6), BENCH_WEBHOOK_EVENTS (per run and side, default 300), BENCH_OPEN_PAYMENTS (default 10,000),
 * BENCH_LIST_* (bench/list.ts), BENCH_ROUTING_* (bench/routing.ts), BENCH_DISPUTES (chargebacks per run, default 200),
 * BENCH_DISPUTE_CONCURRENCY (notices in flight, default 16), BENCH_CHECKOUT_* and CHROMIUM_PATH (bench/checkout.ts),
 * BENCH_SUBSCRIPTIONS, BENCH_BILLING_RUNS, BENCH_BILLING_CONCURRENCY, BENCH_BILLING_EVENTS (bench/billing.ts), BENCH_NODE_ARGS (node flags for the
 * processes it starts, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * Scenarios not run keep their last numbers in latest.json, under `earlier` the run they come from.
 */
const OPEN_PAYMENTS = Number(process.env.BENCH_OPEN_PAYMENTS ?? 10_000);
const DEFAULT_SCENARIOS = ALL_SCENARIOS.filter((s) => s !== 'routing');
const SCENARIOS = new Set((process.env.BENCH_SCENARIOS ?? DEFAULT_SCENARIOS.join(',')).split(','));

async function main(): Promise<void> {
  const config = loadConfig();
  const scratch = mkdtempSync(join(tmpdir(), 'switchboard-bench-'));
  const stops: (() => Promise<unknown>)[] = [];
  const started = performance.now();
  try {
    log('bench: bringing the stack up');
    const stack = await startStack(config, scratch, stops);
    const merchant = await prepareMerchant(config, stack);

    log('bench: warming up');
    await drive(30, 4, async () => { await merchant.payOnce(); });
    await drive(30, 4, merchant.floorOnce);
    // Set up now so that a build without adaptive routing fails before the other scenarios, not after them.
    const routingScenario = SCENARIOS.has('routing')
      ? await prepareRoutingScenario({ api: merchant.http, token: merchant.token, provider: merchant.provider, log })
      : undefined;
    const paymentId = await merchant.payOnce();

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
    const scenarios: [string, () => Promise<unknown>][] = [
      ['read', () => readScenario({ stack, paymentId, key: merchant.key })],
      ['payment', () => paymentScenario(stack, merchant)],
      ['webhooks', () => webhooksScenario(stack, merchant)],
      // Before memory, so that its workflows are gone before the worker's RSS is sampled.
      ['disputes', () => disputesScenario(stack, merchant)],
      ['memory', () => memoryScenario(stack, merchant, config.workerMaxCachedWorkflows)],
      ['list', () => listScenario(stack, merchant)],
      ['overhead', () => overheadScenario({ stack, paymentId, key: merchant.key })],
      ['checkout', () => checkoutScenario(stack, merchant)],
      // Last: its renewals keep both cores busy for minutes.
      ['billing', () => billingScenario(stack, merchant)],
    ];
    for (const [name, run] of scenarios) {
      if (!SCENARIOS.has(name)) continue;
      measured[name] = await run();
      lap(name);
    }
    if (routingScenario) {
      log(`bench: routing, ${ROUTING_PAYMENTS} payments per strategy`);
      measured.routing = await routingScenario.run();
      lap('routing');
    }

    const seconds = writeResults(measured, secondsOf, started);
    for (const line of table(measured)) log(line);
    if (measured.routing) {
      log('');
      for (const line of routingRows(measured.routing as Parameters<typeof routingRows>[0])) log(line);
    }
    log(`\nbench: ${seconds} s in all (${Object.entries(secondsOf).map(([name, s]) => `${name} ${s}`).join(', ')})`);
    await stack.client.connection.close();
  } finally {
    for (const child of children.reverse()) if (child.exitCode === null) child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 500));
    for (const stop of stops.reverse()) await stop().catch(() => {});
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** `memory`: one set of open payments, sampled RUNS times 5 s apart: the worker's resident memory once they are all waiting. */
async function memoryScenario(stack: Stack, merchant: Merchant, maxCachedWorkflows: number) {
  log(`bench: memory, creating ${OPEN_PAYMENTS} open payments`);
  const t0 = performance.now();
  await drive(OPEN_PAYMENTS, 32, async () => { await merchant.http.post('/payments', { amount: 500, currency: 'USD' }, merchant.key); });
  log(`bench: ${OPEN_PAYMENTS} open payments in ${round((performance.now() - t0) / 1000)} s`);
  return repeat('memory', async () => {
    await new Promise((r) => setTimeout(r, 5000));
    return { worker_rss_mb: rssMb(stack.worker.pid!), open_payments: OPEN_PAYMENTS, max_cached_workflows: maxCachedWorkflows };
  });
}

/** `list`: bench/list.ts's walk over a seeded page of payments; its runs and their median. */
async function listScenario(stack: Stack, merchant: Merchant) {
  const list = await runListScenario({
    db: stack.db, databaseUrl: stack.databaseUrl, api: stack.api, apiPid: stack.apiProc.pid!, key: merchant.key, account: merchant.account, log, runs: RUNS,
  });
  return { payments: list.payments, runs: list.runs, median: medianOf(list.runs) };
}

main().then(() => process.exit(0), (err) => {
  console.error('bench failed:', err instanceof TemporalCliMissing ? err.message : err);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
});
