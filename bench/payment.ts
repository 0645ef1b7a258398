// The payment scenario (docs/performance.md#scenarios): payments made one at a time and 16 at a time,
// ours through the API against two floors (a bare Temporal workflow per payment, its no-op processor
// call a local activity as the engine makes it, or an ordinary activity as the older floor did), with
// where each side's CPU goes, per process. The sides run in turns so that all see the same machine.
// Two lines of ours: the realistic one (two workers, two configs that cascade, a card mix, a webhook
// endpoint), and the plain one (one worker, one config, every payment approved, no endpoint).

import { ENV_SCHEMAS } from '../db/environments';
import { cpuSince, drive, Repeated, round, summarize, type Processes } from './measure';
import { prepareCascadingMerchant, type Merchant } from './merchant';
import { lagSummary, startReceiver, type Receiver } from './receiver';
import { log, repeat } from './runs';
import { pidsNamed, startWorker, stopProcess, type Stack } from './stack';

const PAYMENTS = Number(process.env.BENCH_PAYMENTS ?? 60);
/** Each payment run alternates its sides in this many slices (the c16 runs: PAYMENTS × 4 a side). */
const PAYMENT_SLICES = 4;
/** The plain line is there for comparison: half the payments, in half the slices. */
const PLAIN_SLICES = 2;
const CONCURRENCY = 16;
/** The realistic mix: one payment in ten pays with a card every processor hard-declines… */
const HARD_DECLINE_EVERY = 10;
/** …and one in ten is soft-declined at the primary and approved at the backup (a cascade). */
const CASCADE_SHARE = 0.1;
/** How long a slice waits for its payments' webhook deliveries before the bench fails. */
const DELIVERY_TIMEOUT_MS = 120_000;

/** One side of a line: its processes, its one payment, and (ours with webhooks) the wait for its deliveries. */
interface Contender { processes: Processes; pay: () => Promise<void>; deliveries?: () => Promise<number[]> }

/** One side's share of a run: its payments' latencies, its time driving them, each process's CPU, its deliveries' lags. */
interface Side { latencies: number[]; elapsedMs: number; cpu: Record<string, number>; payments: number; lags: number[] }

type Line = Record<'ours' | 'floor' | 'local', Contender>;


const newSide = (): Side => ({ latencies: [], elapsedMs: 0, cpu: {}, payments: 0, lags: [] });

/**
 * One slice of a side's run: `payments` payments at `concurrency`, added to the side. The CPU is read
 * once the webhook deliveries the payments caused have arrived (they finish after the answers), so that
 * their work is charged here and not to the next slice; the latencies and time are the answers' alone.
 */
async function slice(side: Side, contender: Contender, payments: number, concurrency: number): Promise<void> {
  const cpu = cpuSince(contender.processes);
  const run = await drive(payments, concurrency, contender.pay);
  if (contender.deliveries) side.lags.push(...await contender.deliveries());
  for (const [name, ms] of Object.entries(cpu())) side.cpu[name] = (side.cpu[name] ?? 0) + ms;
  side.latencies.push(...run.latencies);
  side.elapsedMs += run.elapsedMs;
  side.payments += payments;
}

function perPayment(side: Side): Record<string, number> {
  const ms = Object.fromEntries(Object.entries(side.cpu).map(([name, total]) => [name, round(total / side.payments)]));
  return { ...ms, total: round(Object.values(side.cpu).reduce((sum, total) => sum + total, 0) / side.payments) };
}

const prefixed = (prefix: string, fields: Record<string, number>) => Object.fromEntries(Object.entries(fields).map(([name, n]) => [`${prefix}${name}`, n]));

/**
 * One run of a line: `total` payments a side at `concurrency`, the sides in turns over `slices` slices,
 * the order reversed every other slice: this machine's speed moves within seconds, and one side's whole
 * run after another's read that as a difference between them (as the read's runs did; see readInTurns
 * in bench/read.ts). `ratio` is ours ÷ the older floor, `fair_ratio` ours ÷ the floor, `cpu_ratio` our
 * CPU per payment ÷ the floor's.
 */
async function runLine(line: Line, total: number, concurrency: number, slices: number): Promise<Record<string, number>> {
  const sides = { ours: newSide(), floor: newSide(), local: newSide() };
  const order = ['ours', 'floor', 'local'] as const;
  const perSlice = Math.ceil(total / slices);
  for (let i = 0; i < slices; i++) {
    for (const name of i % 2 ? [...order].reverse() : order) await slice(sides[name], line[name], perSlice, concurrency);
  }
  const [ours, floor, local] = order.map((name) => summarize(sides[name].latencies, sides[name].elapsedMs));
  const cpu = { ours: perPayment(sides.ours), floor: perPayment(sides.floor), local: perPayment(sides.local) };
  return {
    ...ours, floor_per_s: floor.per_s, floor_p50_ms: floor.p50_ms, floor_p99_ms: floor.p99_ms, ratio: round(ours.per_s / floor.per_s),
    local_floor_per_s: local.per_s, local_floor_p50_ms: local.p50_ms, local_floor_p99_ms: local.p99_ms, fair_ratio: round(ours.per_s / local.per_s),
    ...prefixed('cpu_ms_', cpu.ours), ...prefixed('floor_cpu_ms_', cpu.floor), ...prefixed('local_floor_cpu_ms_', cpu.local),
    cpu_ratio: round(cpu.ours.total / cpu.local.total),
    ...(sides.ours.lags.length ? lagSummary(sides.ours.lags) : {}),
  };
}

/**
 * Each side warmed at the line's concurrency, then RUNS runs of it; `afterRun` adds fields to a run (and
 * is called once after the warm-up, its answer dropped, so that a run's fields are its own).
 */
async function measureLine(name: string, line: Line, total: number, concurrency: number, slices: number, afterRun = async () => ({})) {
  // The first run at 16 otherwise opened some twenty Postgres connections (a backend started, its caches
  // filled, each), which the floor has none of and which steady traffic does not pay — the pools had
  // reaped them, idle, during the runs at 1.
  log(`bench: payments ${name}, warming up`);
  for (const side of Object.values(line)) {
    await drive(concurrency * 2, concurrency, side.pay);
    await side.deliveries?.();
  }
  await afterRun();
  return repeat(`payments ${name}`, async () => ({ ...await runLine(line, total, concurrency, slices), ...await afterRun() }));
}

/** The realistic line's payments since it was last read: their ids, and how many paid with a hard-declined card. */
interface Mix { ids: string[]; declined: number }

/** The realistic side's payment: the card mix, each answer checked against its card, its delivery awaited. */
function realisticPay(pay: (declined: boolean) => Promise<{ id: string; status: string }>, receiver: Receiver, mix: Mix) {
  let seq = 0;
  return async () => {
    const declined = seq++ % HARD_DECLINE_EVERY === HARD_DECLINE_EVERY - 1;
    const payment = await pay(declined);
    const expected = declined ? 'FAILED' : 'SUCCEEDED';
    if (payment.status !== expected) throw new Error(`payment ${payment.id} ended ${payment.status}, not ${expected}`);
    receiver.expect(declined ? 'payment_intent.payment_failed' : 'payment_intent.succeeded', payment.id, performance.now());
    mix.ids.push(payment.id);
    if (declined) mix.declined += 1;
  };
}

/**
 * `payment`: both lines at 1 and at 16, and where a payment's CPU goes, per process (what the sides
 * compete for on a shared machine): each process's CPU time over the side's run, divided by its
 * payments. The Temporal server and Postgres are counted when they run here (a remote one counts 0);
 * Postgres is ours alone. Keys: plain_c1, plain_c16, c1, c16 (the realistic line).
 */
export async function paymentScenario(stack: Stack, merchant: Merchant): Promise<Record<string, Repeated<Record<string, number>>>> {
  const payment: Record<string, Repeated<Record<string, number>>> = {};
  const ours = (workers: () => number[]): Processes => ({
    worker: () => [stack.worker.pid!], ...(workers().length ? { worker2: workers } : {}), api: () => [stack.apiProc.pid!], simulator: () => [stack.simProc.pid!],
    temporal: () => pidsNamed('temporal'), postgres: () => pidsNamed('postgres'), driver: () => [process.pid],
  });
  const floorProcesses: Processes = { worker: () => [stack.floorWorker.pid!], temporal: () => pidsNamed('temporal'), driver: () => [process.pid] };
  const floors = { floor: { processes: floorProcesses, pay: merchant.floorOnce }, local: { processes: floorProcesses, pay: merchant.floorLocalOnce } };
  const sizes = (scale: number) => [['c1', 1, PAYMENTS * scale], ['c16', CONCURRENCY, PAYMENTS * 4 * scale]] as const;

  // The plain line first: the second worker is not started yet.
  const plain: Line = { ours: { processes: ours(() => []), pay: async () => { await merchant.payOnce(); } }, ...floors };
  for (const [name, concurrency, total] of sizes(0.5)) payment[`plain_${name}`] = await measureLine(`plain ${name}`, plain, total, concurrency, PLAIN_SLICES);

  const receiver = await startReceiver();
  const worker2 = await startWorker(stack);
  let cascading: Awaited<ReturnType<typeof prepareCascadingMerchant>> | undefined;
  try {
    // Hard-declined cards never reach the knob (the card declines first), so the rate is of the others.
    cascading = await prepareCascadingMerchant(merchant, CASCADE_SHARE / (1 - 1 / HARD_DECLINE_EVERY), receiver.url);
    const mix: Mix = { ids: [], declined: 0 };
    const realistic: Line = {
      ours: { processes: ours(() => [worker2.pid!]), pay: realisticPay(cascading.pay, receiver, mix), deliveries: () => receiver.settle(DELIVERY_TIMEOUT_MS) },
      ...floors,
    };
    // A run's cascades, counted from its charges (a cascaded payment has two), outside the CPU's count.
    const mixOfRun = async () => {
      const [{ charges }] = await stack.db.withSchema(ENV_SCHEMAS.production).from('charges').whereIn('payment_id', mix.ids).count({ charges: '*' });
      const fields = { hard_declines: mix.declined, cascades: Number(charges) - mix.ids.length };
      Object.assign(mix, { ids: [], declined: 0 });
      return fields;
    };
    for (const [name, concurrency, total] of sizes(1)) payment[name] = await measureLine(name, realistic, total, concurrency, PAYMENT_SLICES, mixOfRun);
  } finally {
    await cascading?.close().catch(() => {});
    receiver.close();
    await stopProcess(worker2);
  }
  return payment;
}
