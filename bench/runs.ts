// How often each scenario runs and how its runs are told apart (docs/performance.md#scenarios): every
// scenario module repeats its measure through here, so BENCH_RUNS means the same for all of them.

import { medianOf, Repeated } from './measure';

export const RUNS = Number(process.env.BENCH_RUNS ?? 3);

export const log = (line: string) => process.stdout.write(`${line}\n`);

/** Runs `measure` RUNS times, one after the other; every run and the median of each number. */
export async function repeat<T extends Record<string, number>>(name: string, measure: (run: number) => Promise<T>): Promise<Repeated<T>> {
  const runs: T[] = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`bench: ${name}, run ${run}/${RUNS}`);
    runs.push(await measure(run));
  }
  return { runs, median: medianOf(runs) };
}
