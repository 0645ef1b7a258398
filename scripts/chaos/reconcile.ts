import type { Db } from '../../db/knex';
import type { Environment } from '../../db/environments';
import { AnsweredCharge, chargesOfPayments, listPayments, type ListedPayment } from '../../db/payments';
import { listRefunds } from '../../db/refunds';
import { listEvents } from '../../db/events';
import type { RequestRecord, Received } from './client';
import type { Merchant, PaymentRun } from './workload';

/**
 * The chaos suite's verdict: our books (Postgres, through the stores) against the sandbox processor's
 * ledger (`GET /_inspect/ledger`), the clients' final answers and what the webhook receiver got.
 * Every figure under `breaches` must be 0.
 */
export interface LedgerCharge {
  id: string;
  status: string;
  amount: number;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  idempotency_key: string;
}

export interface Figures {
  requests: { total: number; answered: number; tries: number; in_use_retries: number };
  payments: { asked: number; in_db: number; by_status: Record<string, number> };
  processor: { charges: number; captured: number; succeeded_amounts: number; refunded: number; refunds_succeeded: number };
  webhooks: { events: number; delivered: number; receipts: number };
  /** Each must be 0. */
  breaches: {
    unanswered: number;
    payments_lost: number;
    payments_duplicated: number;
    payments_unsettled: number;
    charged_twice: number;
    money_held_while_failed_or_canceled: number;
    money_without_payment: number;
    captured_differs_from_payment: number;
    refunds_above_captures: number;
    refunds_differ_from_processor: number;
    refunds_unsettled: number;
    events_missing: number;
    events_under_two_ids: number;
  };
  /** What each breach is about, for the report (ids, statuses, amounts). */
  details: string[];
}

const ENV: Environment = 'production';
const TOOK_MONEY = new Set(['SUCCEEDED', 'PARTIALLY_REFUNDED', 'REFUNDED']);
const NO_MONEY = new Set(['FAILED', 'CANCELED']);
/** Bounds the page loops: far beyond any run's size. */
const MAX_PAGES = 1_000;

async function allPayments(db: Db, accountId: string): Promise<ListedPayment[]> {
  const rows: ListedPayment[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const listed = await listPayments(db, ENV, accountId, {}, { page }, 100);
    rows.push(...(listed?.rows ?? []));
    if (!listed?.hasMore) break;
  }
  return rows;
}

async function allPages<T extends object>(list: (page: number) => Promise<{ rows: T[] }>): Promise<T[]> {
  const rows: T[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const listed = await list(page);
    rows.push(...listed.rows);
    if (listed.rows.length < 100) break;
  }
  return rows;
}

/** A payment as the details name it: its id and the client's index (which fault it met is in the run's log). */
const label = (p: ListedPayment) => `${p.id} (#${(p.metadata as Record<string, unknown> | null)?.chaos_index ?? '?'})`;

/** What a processor charge holds now: an open authorization, or what was captured and not refunded. */
const heldBy = (charge: LedgerCharge) => (charge.status === 'authorized' ? charge.authorized_amount : charge.captured_amount - charge.refunded_amount);

export async function reconcile(input: {
  db: Db;
  merchant: Merchant;
  runs: PaymentRun[];
  requests: RequestRecord[];
  ledger: LedgerCharge[];
  received: Received[];
}): Promise<Figures> {
  const { db, merchant, runs, requests, ledger, received } = input;
  const details: string[] = [];
  const payments = await allPayments(db, merchant.accountId);
  const charges = payments.length ? await chargesOfPayments(db, ENV, payments.map((p) => p.id)) : [];
  const refunds = await allPages((page) => listRefunds(db, ENV, merchant.accountId, {}, { page, limit: 100 }));
  const events = await allPages((page) => listEvents(db, ENV, merchant.accountId, {}, { page, limit: 100 }));

  const unanswered = requests.filter((r) => r.status === 0 || r.status >= 500 || r.status === 409);
  for (const r of unanswered) {
    details.push(`unanswered: ${r.method} ${r.path} → ${r.status || 'no answer'} ${r.reason ?? ''} after ${r.tries} tries: ${r.message ?? ''}`);
  }

  // Payments by the client's index (metadata.chaos_index): none missing, none twice.
  const byIndex = new Map<number, ListedPayment[]>();
  for (const p of payments) {
    const index = Number((p.metadata as Record<string, unknown> | null)?.chaos_index);
    byIndex.set(index, [...(byIndex.get(index) ?? []), p]);
  }
  const lost = runs.filter((run) => !byIndex.has(run.index) || (run.paymentId && !payments.some((p) => p.id === run.paymentId)));
  for (const run of lost) details.push(`payment lost: #${run.index} (${run.kind}, answered id ${run.paymentId ?? 'none'})`);
  const duplicated = [...byIndex.entries()].filter(([, rows]) => rows.length > 1);
  for (const [index, rows] of duplicated) details.push(`payment #${index} created ${rows.length} times: ${rows.map((p) => p.id).join(', ')}`);
  const unsettled = payments.filter((p) => p.status === 'PROCESSING' || p.status === 'CREATED' || p.status === 'REQUIRES_ACTION');
  for (const p of unsettled) details.push(`payment ${label(p)} still ${p.status}`);

  const money = processorBooks(payments, charges, ledger, details);
  const refundFigures = refundBooks(payments, charges, refunds, ledger, details);
  const hooks = webhookBooks(events.map((e) => e.id), received, details);

  const byStatus: Record<string, number> = {};
  for (const p of payments) byStatus[p.status] = (byStatus[p.status] ?? 0) + 1;
  return {
    requests: {
      total: requests.length, answered: requests.length - unanswered.length,
      tries: requests.reduce((sum, r) => sum + r.tries, 0), in_use_retries: requests.reduce((sum, r) => sum + r.inUse, 0),
    },
    payments: { asked: runs.length, in_db: payments.length, by_status: byStatus },
    processor: { ...money.figures, ...refundFigures.figures },
    webhooks: hooks.figures,
    breaches: {
      unanswered: unanswered.length, payments_lost: lost.length, payments_duplicated: duplicated.length, payments_unsettled: unsettled.length,
      ...money.breaches, ...refundFigures.breaches, ...hooks.breaches,
    },
    details,
  };
}

function processorBooks(payments: ListedPayment[], charges: AnsweredCharge[], ledger: LedgerCharge[], details: string[]) {
  const paymentOfCharge = new Map(charges.map((c) => [c.id, c.payment_id]));
  const atProcessor = new Map<string, LedgerCharge[]>();
  let withoutPayment = 0;
  for (const charge of ledger) {
    const paymentId = paymentOfCharge.get(charge.idempotency_key);
    if (!paymentId) {
      if (heldBy(charge) > 0) {
        withoutPayment++;
        details.push(`processor charge ${charge.id} (${charge.status}, ${heldBy(charge)}) under key ${charge.idempotency_key}: no charge of ours`);
      }
      continue;
    }
    atProcessor.set(paymentId, [...(atProcessor.get(paymentId) ?? []), charge]);
  }
  let chargedTwice = 0;
  let heldWhileFailed = 0;
  let capturedDiffers = 0;
  for (const p of payments) {
    const own = atProcessor.get(p.id) ?? [];
    const taking = own.filter((c) => c.captured_amount > 0 || c.status === 'authorized');
    if (taking.length > 1) {
      chargedTwice++;
      details.push(`payment ${label(p)} (${p.status}) charged ${taking.length} times: ${taking.map((c) => `${c.id} ${c.status} ${c.captured_amount || c.authorized_amount}`).join(', ')}`);
    }
    const held = own.reduce((sum, c) => sum + heldBy(c), 0);
    if (NO_MONEY.has(p.status) && held > 0) {
      heldWhileFailed++;
      details.push(`payment ${label(p)} is ${p.status} while the processor holds ${held}: ${own.map((c) => `${c.id} ${c.status}`).join(', ')}`);
    }
    const captured = own.reduce((sum, c) => sum + c.captured_amount, 0);
    const expected = TOOK_MONEY.has(p.status) ? Number(p.amount) : 0;
    if (captured !== expected) {
      capturedDiffers++;
      details.push(`payment ${label(p)} (${p.status}, amount ${p.amount}): the processor captured ${captured}`);
    }
  }
  return {
    figures: {
      charges: ledger.length,
      captured: ledger.reduce((sum, c) => sum + c.captured_amount, 0),
      succeeded_amounts: payments.filter((p) => TOOK_MONEY.has(p.status)).reduce((sum, p) => sum + Number(p.amount), 0),
    },
    breaches: {
      charged_twice: chargedTwice, money_held_while_failed_or_canceled: heldWhileFailed, money_without_payment: withoutPayment,
      captured_differs_from_payment: capturedDiffers,
    },
  };
}

function refundBooks(
  payments: ListedPayment[], charges: AnsweredCharge[], refunds: { payment_id: string; status: string; amount: number; id: string }[],
  ledger: LedgerCharge[], details: string[],
) {
  const ledgerByKey = new Map(ledger.map((c) => [c.idempotency_key, c]));
  let aboveCaptures = 0;
  let differs = 0;
  for (const c of ledger) {
    if (c.refunded_amount > c.captured_amount) {
      aboveCaptures++;
      details.push(`processor charge ${c.id}: refunded ${c.refunded_amount} of ${c.captured_amount} captured`);
    }
  }
  for (const p of payments) {
    const ours = refunds.filter((r) => r.payment_id === p.id && r.status === 'SUCCEEDED').reduce((sum, r) => sum + Number(r.amount), 0);
    const theirs = charges.filter((c) => c.payment_id === p.id).reduce((sum, c) => sum + (ledgerByKey.get(c.id)?.refunded_amount ?? 0), 0);
    if (ours > Number(p.amount)) {
      aboveCaptures++;
      details.push(`payment ${label(p)}: refunds of ${ours} above its amount ${p.amount}`);
    }
    if (ours !== theirs) {
      differs++;
      details.push(`payment ${label(p)}: our succeeded refunds ${ours}, the processor's ${theirs}`);
    }
  }
  const pending = refunds.filter((r) => r.status === 'PENDING');
  for (const r of pending) details.push(`refund ${r.id} still PENDING`);
  return {
    figures: {
      refunded: ledger.reduce((sum, c) => sum + c.refunded_amount, 0),
      refunds_succeeded: refunds.filter((r) => r.status === 'SUCCEEDED').reduce((sum, r) => sum + Number(r.amount), 0),
    },
    breaches: { refunds_above_captures: aboveCaptures, refunds_differ_from_processor: differs, refunds_unsettled: pending.length },
  };
}

/** Every event reached the receiver, always under its own id as `webhook-id` (Standard Webhooks: the event id). */
export function webhookBooks(eventIds: string[], received: Received[], details: string[]) {
  const idsOf = new Map<string, Set<string>>();
  for (const r of received) idsOf.set(r.eventId, (idsOf.get(r.eventId) ?? new Set()).add(r.webhookId));
  const missing = eventIds.filter((id) => !idsOf.has(id));
  for (const id of missing.slice(0, 20)) details.push(`event ${id} never reached the receiver`);
  const twoIds = [...idsOf.entries()].filter(([eventId, ids]) => ids.size > 1 || !ids.has(eventId));
  for (const [eventId, ids] of twoIds.slice(0, 20)) details.push(`event ${eventId} delivered under webhook-id ${[...ids].join(', ')}`);
  return {
    figures: { events: eventIds.length, delivered: eventIds.length - missing.length, receipts: received.length },
    breaches: { events_missing: missing.length, events_under_two_ids: twoIds.length },
  };
}

/** The figures as a small table, breaches last; lines of detail (at most 40) below it. */
export function formatFigures(figures: Figures): string {
  const rows: [string, string][] = [
    ['requests (answered / sent)', `${figures.requests.answered} / ${figures.requests.total}`],
    ['tries (409 in use, retried)', `${figures.requests.tries} (${figures.requests.in_use_retries})`],
    ['payments (in Postgres / asked)', `${figures.payments.in_db} / ${figures.payments.asked}`],
    ['payments by status', Object.entries(figures.payments.by_status).map(([s, n]) => `${s} ${n}`).join(', ')],
    ['processor charges', String(figures.processor.charges)],
    ['captured at the processor / succeeded payments', `${figures.processor.captured} / ${figures.processor.succeeded_amounts}`],
    ['refunded at the processor / succeeded refunds', `${figures.processor.refunded} / ${figures.processor.refunds_succeeded}`],
    ['events (delivered / written), receipts', `${figures.webhooks.delivered} / ${figures.webhooks.events}, ${figures.webhooks.receipts}`],
    ...Object.entries(figures.breaches).map(([name, n]): [string, string] => [`breach: ${name.replaceAll('_', ' ')}`, n ? `${n}  ✗` : '0']),
  ];
  const width = Math.max(...rows.map(([name]) => name.length));
  const table = rows.map(([name, value]) => `  ${name.padEnd(width)}  ${value}`).join('\n');
  const details = figures.details.slice(0, 40).map((line) => `  - ${line}`).join('\n');
  return details ? `${table}\n\n${details}${figures.details.length > 40 ? `\n  … ${figures.details.length - 40} more` : ''}` : table;
}

export const breachCount = (figures: Figures) => Object.values(figures.breaches).reduce((sum, n) => sum + n, 0);
