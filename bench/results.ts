// What the bench leaves behind: bench/results/latest.json (every run and the median of each number,
// scenarios not run keeping their earlier numbers) and the table it prints, each median beside the
// target docs/performance.md sets for it.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { join } from 'node:path';
import { ROOT_DIR } from '../db/local-state';
import { Repeated, round } from './measure';
import { RUNS } from './runs';

export const ALL_SCENARIOS = ['read', 'payment', 'webhooks', 'memory', 'list', 'overhead', 'routing'];
const RESULTS_FILE = join(ROOT_DIR, 'bench', 'results', 'latest.json');
/** The targets of docs/performance.md, printed beside the medians. */
const TARGETS = { payment: '≥ 0.8', read: '≥ 0.8', memory: '≤ 500 MB', list: 'p99 ≤ 50 ms', webhooks: '≥ 0.8' };

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
