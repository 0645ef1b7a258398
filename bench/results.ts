// What the bench leaves behind: bench/results/latest.json (every run and the median of each number,
// scenarios not run keeping their earlier numbers) and the table it prints, each median beside the
// target docs/performance.md sets for it.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT_DIR } from '../db/local-state';
import { Repeated, round } from './measure';
import { RUNS } from './runs';
import { checkoutRows } from './checkout';
import { disputesRows } from './disputes';
import { billingRows, type BillingResult } from './billing';

export const ALL_SCENARIOS = ['read', 'payment', 'webhooks', 'disputes', 'memory', 'list', 'overhead', 'checkout', 'billing', 'routing'];
const RESULTS_FILE = join(ROOT_DIR, 'bench', 'results', 'latest.json');
/** The targets of docs/performance.md, printed beside the medians. */
const TARGETS = { payment_c1: '≥ 0.9', payment_c16: '≥ 0.8', payment_cpu: '≤ 1.2', read: '≥ 0.8', memory: '≤ 500 MB', list: 'p99 ≤ 50 ms', webhooks: '≥ 0.8', billing: '≤ 500 MB' };

/**
 * Writes latest.json: this run's scenarios, and those it left out with their last numbers and, under
 * `earlier`, the run they come from. Answers the bench's seconds in all.
 */
export function writeResults(measured: Record<string, unknown>, secondsOf: Record<string, number>, started: number): number {
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
  return results.seconds;
}

/** The printed table: each scenario's median beside its target, and the runs it is the median of. */
export function table(measured: Record<string, unknown>): string[] {
  const lines = ['', `${'scenario'.padEnd(16)}${'median'.padEnd(58)}${'target'.padEnd(14)}runs`];
  const row = (name: string, median: string, target: string, runs: string) => lines.push(`${name.padEnd(16)}${median.padEnd(58)}${target.padEnd(14)}${runs}`);
  const runsOf = (r: Repeated<Record<string, number>>, field: string) => r.runs.map((x) => x[field]).join(' / ');
  const read = measured.read as Repeated<Record<string, number>> | undefined;
  if (read) row('read (32 conn)', `${read.median.rps} req/s vs ${read.median.baseline_rps} bare → ${read.median.ratio}`, TARGETS.read, runsOf(read, 'ratio'));
  if (read?.median.cpu_us_per_request) row('read CPU', `${read.median.cpu_us_per_request} µs vs ${read.median.baseline_cpu_us_per_request} µs bare per request`, '', runsOf(read, 'cpu_us_per_request'));
  const payment = measured.payment as Record<string, Repeated<Record<string, number>>> | undefined;
  for (const line of ['c1', 'c16', 'plain_c1', 'plain_c16']) {
    const run = payment?.[line];
    if (run) paymentRows(row, line, run, runsOf(run, 'fair_ratio'), runsOf(run, 'cpu_ratio'));
  }
  const webhooks = measured.webhooks as Repeated<Record<string, number>> | undefined;
  if (webhooks) row('webhooks', `${webhooks.median.per_s}/s vs floor ${webhooks.median.floor_per_s}/s → ${webhooks.median.ratio}`, TARGETS.webhooks, runsOf(webhooks, 'ratio'));
  for (const line of disputesRows(measured.disputes as Repeated<Record<string, number>> | undefined)) row(...line);
  const memory = measured.memory as Repeated<Record<string, number>> | undefined;
  if (memory) row('memory', `worker RSS ${memory.median.worker_rss_mb} MB, ${memory.median.open_payments} open payments`, TARGETS.memory, runsOf(memory, 'worker_rss_mb'));
  const billing = measured.billing as BillingResult | undefined;
  if (billing) for (const [name, median, target, runs] of billingRows(billing, TARGETS.billing)) row(name, median, target, runs);
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
  const checkout = measured.checkout as Parameters<typeof checkoutRows>[0] | undefined;
  if (checkout) for (const line of checkoutRows(checkout)) row(...line);
  return lines;
}

/**
 * A payment line's rows (bench/payment.ts): its rate against the floor and the older floor, its CPU per
 * payment against the floor's, each process's part of both. The targets are the realistic line's.
 */
function paymentRows(row: (name: string, median: string, target: string, runs: string) => void, line: string, run: Repeated<Record<string, number>>, ratios: string, cpuRatios: string): void {
  const m = run.median;
  const realistic = !line.startsWith('plain');
  const name = realistic ? `payment ${line}` : line.replace('_', ' ');
  const c16 = line.endsWith('c16');
  row(name, `${m.per_s}/s p50 ${Math.round(m.p50_ms)} ms vs floor ${m.local_floor_per_s}/s → ${m.fair_ratio} (old ${m.floor_per_s}/s → ${m.ratio})`,
    realistic ? (c16 ? TARGETS.payment_c16 : TARGETS.payment_c1) : '', ratios);
  row(`${name} CPU`, `${m.cpu_ms_total} ms vs floor ${m.local_floor_cpu_ms_total} ms a payment → ${m.cpu_ratio}`, realistic && c16 ? TARGETS.payment_cpu : '', cpuRatios);
  const parts = (prefix: string, processes: string[]) => processes.filter((p) => m[`${prefix}${p}`] !== undefined)
    .map((p) => `${p} ${m[`${prefix}${p}`]} (${Math.round((100 * m[`${prefix}${p}`]) / m[`${prefix}total`])} %)`).join(', ');
  row('', `ours: ${parts('cpu_ms_', ['worker', 'worker2', 'api', 'temporal', 'postgres', 'simulator', 'driver'])}`, '', '');
  row('', `floor: ${parts('local_floor_cpu_ms_', ['worker', 'temporal', 'driver'])}`, '', '');
  if (m.delivery_lag_p50_ms !== undefined) {
    row('', `webhook lag p50 ${m.delivery_lag_p50_ms} ms, p99 ${m.delivery_lag_p99_ms} ms; ${m.hard_declines} hard declines, ${m.cascades} cascades a run`, '', '');
  }
}
