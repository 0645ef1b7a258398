// The disputes scenario (issue #45): disputes applied per second from the processor's notifications.
// Ours: the sandbox processor's two notifications of a chargeback (bench/disputes-notices.ts) posted
// to the provider-webhook route for captured payments, each verified, stored and handed to the
// dispute's workflow, whose activity applies it; timed to the row being NEEDS_RESPONSE with both applied.
// The floor: per dispute a bare workflow signalled-with-start per notice, one no-op local activity each.

import { randomUUID } from 'node:crypto';
import { disputeWorkflowId } from '../contracts/disputes';
import { FLOOR_TASK_QUEUE } from './floor/worker';
import { floorDisputeNotice, floorDisputeWorkflow } from './floor/disputes';
import { appliedAt, capturedCharges, chargebackNotices, notifier, type DisputeNotices } from './disputes-notices';
import { cpuSince, drive, percentile, Repeated, round, type Processes } from './measure';
import type { Merchant } from './merchant';
import { log, repeat, RUNS } from './runs';
import { pidsNamed, type Stack } from './stack';

const DISPUTES = Number(process.env.BENCH_DISPUTES ?? 200);
/** How many notifications are in flight at once, on each side (a processor sends its notifications concurrently). */
const CONCURRENCY = Number(process.env.BENCH_DISPUTE_CONCURRENCY ?? 16);
const DISPUTE_SLICES = 4;
/** Reported, not a target: docs/performance.md sets none for disputes (its floor shows what the path costs). */
export const DISPUTES_TARGET = '';

/** One side's share of a run: each dispute's notice→applied latency, its time from first notice to last applied, each process's CPU. */
interface Side { latencies: number[]; elapsedMs: number; cpu: Record<string, number>; disputes: number }

const newSide = (): Side => ({ latencies: [], elapsedMs: 0, cpu: {}, disputes: 0 });

/**
 * Times one slice: `send` posts every notice (its first-sent moment per dispute is recorded), `applied`
 * answers when each dispute was applied once all are. Adds the latencies, the time and the CPU to the side.
 */
async function timedSlice(side: Side, processes: Processes, notices: number, send: (i: number, sentAt: number) => Promise<void>, applied: () => Promise<Map<string, number>>, firstSent: Map<string, number>): Promise<void> {
  const cpu = cpuSince(processes);
  const started = Date.now();
  await drive(notices, CONCURRENCY, (i) => send(i, Date.now()));
  const at = await applied();
  for (const [name, ms] of Object.entries(cpu())) side.cpu[name] = (side.cpu[name] ?? 0) + ms;
  for (const [id, t] of at) side.latencies.push(t - firstSent.get(id)!);
  side.elapsedMs += Math.max(...at.values()) - started;
  side.disputes += at.size;
}

/** Ours: the notices of `disputes` (one chargeback each) sent to the API, timed until all are applied. */
async function oursSlice(stack: Stack, side: Side, processes: Processes, disputes: DisputeNotices[], sender: ReturnType<typeof notifier>): Promise<void> {
  // Dispute after dispute, each one's two notices next to each other (so often in flight together).
  const notices = disputes.flatMap((d) => d.bodies.map((body) => ({ dispute: d, body })));
  const firstSent = new Map<string, number>();
  await timedSlice(side, processes, notices.length, async (i, sentAt) => {
    const { dispute, body } = notices[i];
    if (!firstSent.has(dispute.disputeId)) firstSent.set(dispute.disputeId, sentAt);
    await sender.send(dispute.configId, body);
  }, () => appliedAt(stack.db, disputes.map((d) => d.disputeId)), firstSent);
}

/** The floor: as many disputes, two notices each, signalled-with-start straight to Temporal. */
async function floorSlice(stack: Stack, side: Side, processes: Processes, disputes: number): Promise<void> {
  const batch = randomUUID();
  const ids = Array.from({ length: disputes }, (_, i) => `floor-dispute/${batch}/${i}`);
  const firstSent = new Map<string, number>();
  const applied = async () => {
    const answers = await Promise.all(ids.map((id) => stack.client.workflow.getHandle(id).result() as Promise<number>));
    return new Map(ids.map((id, i) => [id, answers[i]]));
  };
  await timedSlice(side, processes, disputes * 2, async (i, sentAt) => {
    const workflowId = ids[Math.floor(i / 2)];
    if (!firstSent.has(workflowId)) firstSent.set(workflowId, sentAt);
    await stack.client.workflow.signalWithStart(floorDisputeWorkflow, {
      taskQueue: FLOOR_TASK_QUEUE, workflowId, args: [2], signal: floorDisputeNotice,
    });
  }, () => withTimeout(applied(), 120_000, 'the dispute floor (is floorDisputeWorkflow registered on the floor worker?)'), firstSent);
}

function withTimeout<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`disputes: ${what} not done after ${ms / 1000} s`)), ms); });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** A side's disputes per second, its notice→applied percentiles, and each process's CPU per dispute (with the total). */
function measured(side: Side, prefix: string): Record<string, number> {
  const sorted = [...side.latencies].sort((a, b) => a - b);
  const cpu = Object.fromEntries(Object.entries(side.cpu).map(([name, ms]) => [`${prefix}cpu_ms_${name}`, round(ms / side.disputes)]));
  const total = Object.values(side.cpu).reduce((sum, ms) => sum + ms, 0);
  return {
    [`${prefix}per_s`]: round(side.disputes / (side.elapsedMs / 1000)), [`${prefix}p50_ms`]: round(percentile(sorted, 50)),
    [`${prefix}p99_ms`]: round(percentile(sorted, 99)), ...cpu, [`${prefix}cpu_ms_total`]: round(total / side.disputes),
  };
}

/** Ends our disputes' workflows (each waits on its evidence deadline, a week away), so that they hold no worker cache or timers in later scenarios. */
async function endDisputeWorkflows(stack: Stack, disputes: DisputeNotices[]): Promise<void> {
  await drive(disputes.length, CONCURRENCY, async (i) => {
    await stack.client.workflow.getHandle(disputeWorkflowId(disputes[i].disputeId)).terminate('bench: disputes scenario done').catch(() => {});
  });
}

/** `count` chargebacks' notices, each of a payment captured for it now (through the API, untimed). */
async function chargebacks(stack: Stack, merchant: Merchant, count: number): Promise<DisputeNotices[]> {
  const paymentIds: string[] = [];
  await drive(count, CONCURRENCY, async () => { paymentIds.push(await merchant.payOnce()); });
  return (await capturedCharges(stack.db, paymentIds)).map((charge) => chargebackNotices(charge));
}

/**
 * `disputes`: BENCH_DISPUTES chargebacks a run, ours and the floor in turns (DISPUTE_SLICES slices a
 * side, the order reversed every other slice, as the webhooks runs). A side's rate is its disputes over
 * the time from each slice's first notice sent to its last dispute applied; a dispute's latency runs from
 * its first notice sent to its last notice applied. CPU per dispute per process over those times.
 */
export async function disputesScenario(stack: Stack, merchant: Merchant): Promise<Repeated<Record<string, number>>> {
  const ours: Processes = {
    worker: () => [stack.worker.pid!], api: () => [stack.apiProc.pid!], temporal: () => pidsNamed('temporal'), postgres: () => pidsNamed('postgres'), driver: () => [process.pid],
  };
  const floor: Processes = { worker: () => [stack.floorWorker.pid!], temporal: ours.temporal, driver: ours.driver };
  const sender = notifier(stack.api);
  // Every run's payments made first, before the warm-up: the tail of a payment's workflow would
  // otherwise run into a run's first slice, which is ours.
  log(`bench: disputes, capturing ${CONCURRENCY + DISPUTES * RUNS} payments to dispute`);
  const all = await chargebacks(stack, merchant, CONCURRENCY + DISPUTES * RUNS);
  log('bench: disputes, warming up');
  const warm = all.splice(0, CONCURRENCY);
  await oursSlice(stack, newSide(), ours, warm, sender);
  await floorSlice(stack, newSide(), floor, CONCURRENCY);
  await endDisputeWorkflows(stack, warm);
  const result = await repeat('disputes', async () => {
    const disputes = all.splice(0, DISPUTES);
    const limitedBefore = sender.rateLimited();
    const [o, f] = [newSide(), newSide()];
    const perSlice = Math.ceil(DISPUTES / DISPUTE_SLICES);
    for (let i = 0; i < DISPUTE_SLICES; i++) {
      const slice = disputes.slice(i * perSlice, (i + 1) * perSlice);
      const turns = [() => oursSlice(stack, o, ours, slice, sender), () => floorSlice(stack, f, floor, slice.length)];
      for (const turn of i % 2 ? turns.reverse() : turns) await turn();
    }
    await endDisputeWorkflows(stack, disputes);
    const [mine, floors] = [measured(o, ''), measured(f, 'floor_')];
    return { ...mine, ...floors, ratio: round(mine.per_s / floors.floor_per_s), disputes: o.disputes, rate_limited: sender.rateLimited() - limitedBefore };
  });
  await sender.close();
  return result;
}

/** The table's rows for `disputes` (bench/results.ts): name, median, target, the runs it is the median of. */
export function disputesRows(disputes: Repeated<Record<string, number>> | undefined): [string, string, string, string][] {
  if (!disputes) return [];
  const m = disputes.median;
  const runsOf = (field: string) => disputes.runs.map((run) => run[field]).join(' / ');
  const processes = ['worker', 'api', 'temporal', 'postgres', 'driver'];
  return [
    ['disputes', `${m.per_s}/s (p50 ${m.p50_ms}, p99 ${m.p99_ms} ms) vs floor ${m.floor_per_s}/s (p50 ${m.floor_p50_ms} ms) → ${m.ratio}`, DISPUTES_TARGET, runsOf('ratio')],
    ['disputes CPU', `${m.cpu_ms_total} ms vs floor ${m.floor_cpu_ms_total} ms per dispute${m.rate_limited ? `, ${m.rate_limited} notices refused 429 and resent` : ''}`, '', runsOf('cpu_ms_total')],
    ['', processes.map((p) => `${p} ${m[`cpu_ms_${p}`]}${m[`floor_cpu_ms_${p}`] !== undefined ? `/${m[`floor_cpu_ms_${p}`]}` : ''}`).join(', '), '', ''],
  ];
}
