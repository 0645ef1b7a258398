// What the bench's scenarios measure with: a fixed-concurrency driver and the percentiles of its latencies.

import { readFileSync } from 'node:fs';

export const round = (n: number) => Math.round(n * 100) / 100;

/** CPU time (user + system) a process has used so far, in ms (clock ticks are 10 ms on Linux). */
export const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /s, '').split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
};

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function summarize(latencies: number[], elapsedMs: number) {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    per_s: round(latencies.length / (elapsedMs / 1000)),
    p50_ms: round(percentile(sorted, 50)),
    p99_ms: round(percentile(sorted, 99)),
  };
}

/** Runs `total` operations with `concurrency` loops; returns each operation's latency. */
export async function drive(total: number, concurrency: number, op: (i: number) => Promise<void>): Promise<{ latencies: number[]; elapsedMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) {
      const i = next++;
      const t0 = performance.now();
      await op(i);
      latencies.push(performance.now() - t0);
    }
  }));
  return { latencies, elapsedMs: performance.now() - started };
}

/**
 * Runs `concurrency` loops for `ms` milliseconds, each repeating the operation its `setup` makes for it
 * (a loop's own state lives in that closure); returns how many operations ended in the time.
 */
export async function driveFor(ms: number, concurrency: number, setup: (loop: number) => () => Promise<void>): Promise<{ operations: number; elapsedMs: number }> {
  let operations = 0;
  const started = performance.now();
  const until = started + ms;
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    const op = setup(loop);
    while (performance.now() < until) {
      await op();
      operations += 1;
    }
  }));
  return { operations, elapsedMs: performance.now() - started };
}

/** A scenario measured several times: every run, and the median of each number over them. */
export interface Repeated<T extends Record<string, number>> { runs: T[]; median: T }

/** The median of each numeric field over `runs` (the middle value; the mean of the two middle ones for an even count). */
export function medianOf<T extends Record<string, number>>(runs: T[]): T {
  const median: Record<string, number> = {};
  for (const key of Object.keys(runs[0] ?? {})) {
    const values = runs.map((r) => r[key]).filter((v) => typeof v === 'number').sort((a, b) => a - b);
    const mid = Math.floor(values.length / 2);
    median[key] = round(values.length % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2);
  }
  return median as T;
}

/** The processes whose CPU a side is charged with, by name: each a way to find their pids now. */
export type Processes = Record<string, () => number[]>;

/** Each process's CPU (ms) from now on: call the answer to read it. A process gone meanwhile counts what it used. */
export function cpuSince(processes: Processes): () => Record<string, number> {
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
