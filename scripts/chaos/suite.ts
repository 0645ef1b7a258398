import type { Config } from '../../lib/config';
import { createDb } from '../../db/knex';
import { listEvents } from '../../db/events';
import { listPayments } from '../../db/payments';
import { listRefunds } from '../../db/refunds';
import { RetryingClient, WebhookReceiver } from './client';
import { Fault, inject } from './faults';
import { sleep, until } from './processes';
import { Figures, LedgerCharge, reconcile } from './reconcile';
import type { ChaosStack } from './stack';
import { amountOf, drivePayment, kindOf, PaymentRun, setUpMerchant } from './workload';

export interface ChaosOptions {
  config: Config;
  payments: number;
  clients: number;
  /** Tries per request (1–2 s apart). */
  tries: number;
  faults: Fault[];
  /** After the clients are done: how long the stack gets to finish what is in flight (workflows, deliveries). */
  settleMs: number;
  /** The clients stop sending (and the faults stop) this long after the start, whatever is left. */
  driveMs: number;
  log: (line: string) => void;
}

export interface ChaosResult {
  figures: Figures;
  faults: string[];
  seconds: number;
}

/**
 * Drives the workload with `clients` retrying clients while the faults fall, one after the other, each
 * once its share of the payments has been started (so they spread over the run whatever its speed),
 * then waits for the stack to settle and reconciles.
 */
export async function runChaos(stack: ChaosStack, opts: ChaosOptions): Promise<ChaosResult> {
  const started = Date.now();
  const stopAt = started + opts.driveMs;
  const run = `chaos${started.toString(36)}`;
  const receiver = await WebhookReceiver.start();
  const client = new RetryingClient(stack.apiUrl, { tries: opts.tries, timeoutMs: 30_000, stopAt: stopAt + opts.settleMs });
  const db = createDb(stack.databaseUrl, { max: 2 });
  try {
    const merchant = await setUpMerchant(client, opts.config, receiver.url, run);
    client.records.length = 0; // the setup's requests are not the workload's
    const runs: PaymentRun[] = Array.from({ length: opts.payments }, (_, index) => ({ index, kind: kindOf(index), amount: amountOf(index) }));
    let next = 0;
    const drive = async () => {
      while (next < runs.length && Date.now() < stopAt) await drivePayment(client, merchant, runs[next++], run, stopAt);
    };
    const faultLines: string[] = [];
    const faults = async () => {
      for (const [n, fault] of opts.faults.entries()) {
        const due = Math.floor(((n + 1) * runs.length) / (opts.faults.length + 1));
        if (!(await until(() => next >= due || Date.now() >= stopAt, Math.max(0, stopAt - Date.now()), 100))) break;
        if (Date.now() >= stopAt) break;
        const line = `${Math.round((Date.now() - started) / 1000)}s, payment ${next}: ${await inject(stack, fault)}`;
        opts.log(`  · ${line}`);
        faultLines.push(line);
      }
    };
    await Promise.all([...Array.from({ length: opts.clients }, drive), faults()]);
    opts.log(`  · clients done after ${Math.round((Date.now() - started) / 1000)} s; settling`);
    await settle(db, merchant.accountId, receiver, opts.settleMs);
    const ledger = await fetch(`${stack.simulatorUrl}/_inspect/ledger`).then((r) => r.json()) as { charges: LedgerCharge[] };
    const figures = await reconcile({ db, merchant, runs, requests: client.records, ledger: ledger.charges, received: receiver.received });
    return { figures, faults: faultLines, seconds: Math.round((Date.now() - started) / 1000) };
  } finally {
    await client.close();
    await receiver.close();
    await db.destroy();
  }
}

/** Until no payment is PROCESSING, no refund PENDING and every event has reached the receiver, or `timeoutMs`. */
async function settle(db: ReturnType<typeof createDb>, accountId: string, receiver: WebhookReceiver, timeoutMs: number): Promise<void> {
  await until(async () => {
    try {
      const processing = await listPayments(db, 'production', accountId, { status: 'PROCESSING' }, { page: 1 }, 1);
      if (processing?.rows.length) return false;
      const pending = await listRefunds(db, 'production', accountId, { status: 'PENDING' }, { page: 1, limit: 1 });
      if (pending.total > 0) return false;
      const { total } = await listEvents(db, 'production', accountId, {}, { page: 1, limit: 1 });
      const delivered = new Set(receiver.received.map((r) => r.eventId)).size;
      return delivered >= total;
    } catch {
      return false;
    }
  }, timeoutMs, 1_000);
  // Deliveries of the last events may still be retried once more: a moment for late duplicates to show.
  await sleep(1_000);
}
