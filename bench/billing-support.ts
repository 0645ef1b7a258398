// What bench/billing.ts counts with: the webhook receiver, what the database says a round did, and the
// worker processes whose memory it samples.

import { readFileSync } from 'node:fs';
import type { Db } from '../db/knex';
import { ENDED_SUBSCRIPTION_STATUSES } from '../contracts/billing';
import { filterMatches } from '../lib/webhook-events';
import { cpuMs } from './measure';
import { children, pidsNamed, webhookSink, type Stack } from './stack';

/** The pids of the running workers the bench started, stack.worker first (a second one, when the stack has it, after). */
export const workerPids = () => children
  .filter((c) => c.exitCode === null && c.pid !== undefined && c.spawnargs.some((arg) => arg.endsWith('worker/main.js')))
  .map((c) => c.pid!);

/** What a round made since it began: counts, and when the last of each was made (for a rate over its own span). */
export interface BillingCounts {
  sleeping: number; renewed: number; invoices: number; payments: number;
  lastInvoiceAt: Date | null; lastPaymentAt: Date | null;
}

/**
 * A round's work as the database has it: its renewals' invoices and payments, and the subscriptions
 * asleep now. The rows' timestamps are the machine's time (a test clock moves only the billing dates),
 * so the last invoice's and payment's say when each kind of work was done.
 */
export async function billingCounts(db: Db, clockId: string, since: Date): Promise<BillingCounts> {
  const onClock = db('sandbox.subscriptions').where({ test_clock_id: clockId });
  const clock = await db('sandbox.test_clocks').where({ id: clockId }).first('frozen_time');
  // Asleep: running, and caught up with the clock (nothing due until it moves again).
  const [{ sleeping }] = await onClock.clone().whereNotIn('status', ENDED_SUBSCRIPTION_STATUSES)
    .where('clock_caught_up_to', '>=', clock.frozen_time).count({ sleeping: '*' });
  const invoices = db('sandbox.invoices').whereIn('subscription_id', onClock.clone().select('id'))
    .where({ billing_reason: 'subscription_cycle' }).where('created_at', '>=', since);
  const [made] = await invoices.clone()
    .select(db.raw('count(*)::int as invoices'), db.raw('count(distinct subscription_id)::int as renewed'), db.raw('max(created_at) as last_at'));
  const [paid] = await db('sandbox.payments').whereIn('id', invoices.clone().where({ status: 'PAID' }).select('payment_id'))
    .where({ status: 'SUCCEEDED' }).select(db.raw('count(*)::int as payments'), db.raw('max(updated_at) as last_at'));
  return {
    sleeping: Number(sleeping), renewed: made.renewed, invoices: made.invoices, payments: paid.payments,
    lastInvoiceAt: made.last_at, lastPaymentAt: paid.last_at,
  };
}

export type BillingReceiver = Awaited<ReturnType<typeof billingReceiver>>;

/** A local endpoint that passes the handshake and counts the deliveries reaching it (each answered 200). */
export async function billingReceiver(filter: readonly string[]) {
  let received = 0;
  let lastAt = 0;
  const server = await webhookSink(() => {
    received += 1;
    lastAt = performance.now();
  });
  return {
    ...server,
    reset: () => { received = 0; },
    /** How many deliveries the account's events since `since` call for: those the endpoint's filter takes. */
    async expectedSince(db: Db, accountId: string, since: Date): Promise<number> {
      const byName = await db('sandbox.events').where({ account_id: accountId }).where('created_at', '>=', since)
        .select('event').count({ n: '*' }).groupBy('event') as { event: string; n: string }[];
      return byName.filter((e) => filterMatches(filter, e.event)).reduce((sum, e) => sum + Number(e.n), 0);
    },
    /** Waits until `count` deliveries arrived; the milliseconds from `t0` to the last of them. */
    async until(count: number, t0: number, timeoutMs = 30 * 60_000): Promise<number> {
      const deadline = performance.now() + timeoutMs;
      while (received < count) {
        if (performance.now() > deadline) throw new Error(`billing: ${received}/${count} webhooks after ${timeoutMs / 1000} s`);
        await new Promise((r) => setTimeout(r, 200));
      }
      return lastAt - t0;
    },
  };
}

/** The pid of this stack's own Temporal dev server (others may run on the machine): the one started with its port. */
function temporalPids(stack: Stack): number[] {
  const port = (stack.env.TEMPORAL_ADDRESS ?? '').split(':').pop();
  return pidsNamed('temporal').filter((pid) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').includes(`--port ${port}`);
    } catch {
      return false; // gone meanwhile
    }
  });
}

/**
 * Each of the stack's processes' CPU (ms) from now on: call the answer to read it. Postgres is left out:
 * its server is shared with whatever else runs here, and its pool's backends come and go.
 */
export function cpuSince(stack: Stack): () => Record<string, number> {
  const pids: Record<string, number[]> = {
    worker: workerPids(), temporal: temporalPids(stack), api: [stack.apiProc.pid!], simulator: [stack.simProc.pid!], driver: [process.pid],
  };
  const read = () => Object.fromEntries(Object.entries(pids).map(([name, list]) => [name, list.reduce((sum, pid) => {
    try {
      return sum + cpuMs(pid);
    } catch {
      return sum; // gone meanwhile
    }
  }, 0)]));
  const before = read();
  return () => Object.fromEntries(Object.entries(read()).map(([name, ms]) => [name, ms - before[name]]));
}
