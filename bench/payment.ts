// The payment scenario (docs/performance.md#scenarios): payments made one at a time and 16 at a time,
// ours through the API against the floor (a bare Temporal workflow per payment), with where each side's
// CPU goes, per process. The sides run in turns so that both see the same machine.

import { cpuMs, drive, Repeated, round, summarize } from './measure';
import type { Merchant } from './merchant';
import { log, repeat } from './runs';
import { pidsNamed, type Stack } from './stack';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 60);
/** Each payment run alternates its sides in this many slices (the c16 runs: PAYMENTS × 4 a side). */
const PAYMENT_SLICES = 4;
const CONCURRENCY = 16;

/** The processes whose CPU a side's payments are charged with, by name: each a way to find their pids now. */
type Processes = Record<string, () => number[]>;

/** One side's share of a run: its payments' latencies, its time driving them, and each process's CPU. */
interface Side { latencies: number[]; elapsedMs: number; cpu: Record<string, number>; payments: number }

/** Each process's CPU (ms) from now on: call the answer to read it. */
function cpuSince(processes: Processes): () => Record<string, number> {
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
}

const newSide = (): Side => ({ latencies: [], elapsedMs: 0, cpu: {}, payments: 0 });

/** One slice of a side's run: `payments` payments at `concurrency`, added to the side. */
async function slice(side: Side, processes: Processes, payments: number, concurrency: number, op: () => Promise<unknown>): Promise<void> {
  const cpu = cpuSince(processes);
  const run = await drive(payments, concurrency, async () => { await op(); });
  for (const [name, ms] of Object.entries(cpu())) side.cpu[name] = (side.cpu[name] ?? 0) + ms;
  side.latencies.push(...run.latencies);
  side.elapsedMs += run.elapsedMs;
  side.payments += payments;
}

function perPayment(side: Side): Record<string, number> {
  const ms = Object.fromEntries(Object.entries(side.cpu).map(([name, total]) => [name, round(total / side.payments)]));
  return { ...ms, total: round(Object.values(side.cpu).reduce((sum, total) => sum + total, 0) / side.payments) };
}

/**
 * `payment`: where a payment's CPU goes, per process (what the sides compete for on a shared machine):
 * each process's CPU time over the side's run, divided by its payments. The Temporal server and
 * Postgres are counted when they run here (a remote one counts 0); Postgres is ours alone.
 */
export async function paymentScenario(stack: Stack, merchant: Merchant): Promise<Record<string, Repeated<Record<string, number>>>> {
  const { payOnce, floorOnce } = merchant;
  const payment: Record<string, Repeated<Record<string, number>>> = {};
  const ours: Processes = {
    worker: () => [stack.worker.pid!], api: () => [stack.apiProc.pid!], simulator: () => [stack.simProc.pid!],
    temporal: () => pidsNamed('temporal'), postgres: () => pidsNamed('postgres'), driver: () => [process.pid],
  };
  const floor: Processes = { worker: () => [stack.floorWorker.pid!], temporal: ours.temporal, driver: ours.driver };
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
      // a difference between them (as the read's runs did; see readInTurns in bench/read.ts).
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
  return payment;
}
