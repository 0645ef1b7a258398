import type { Knex } from 'knex';
import { appendEvents, type EventRecord } from '../../db/events';
import { insertInvoice, openInvoicesOf, updateInvoice, type InvoiceRow } from '../../db/invoices';
import { findTestClock } from '../../db/test-clocks';
import { insertSubscription, lockSubscription, pricedItems, updateSubscription, type SubscriptionRow } from '../../db/subscriptions';
import { newId } from '../../lib/ids';
import { addIntervals, periodEndAfter, daysToMs } from '../../lib/billing/periods';
import { periodLine, totals } from '../../lib/billing/proration';
import {
  BILLING_SEAL_PURPOSE, ENDED_SUBSCRIPTION_STATUSES, subscriptionStartText, type BillingReason, type InvoiceLine, type SubscriptionClock, type SubscriptionInput, type SubscriptionRef,
} from '../../contracts/billing';
import { clockOf, inOwnWorkflow, invoiceEvent, readClock, refuseBillingCommand, subscriptionEvent, type BillingActivityDeps } from './state';

const iso = (at: number) => new Date(at).toISOString();

/**
 * Makes a period's invoice, once (a second try finds the first's row): OPEN and due now when there is
 * something to pay, PAID at once when nothing is due (a trial, a credit), VOID while collection is paused.
 * Answers the row and its events.
 */
export async function makeInvoice(
  trx: Knex.Transaction, deps: BillingActivityDeps, ref: SubscriptionRef, sub: SubscriptionRow,
  period: { start: number; end: number; reason: BillingReason; lines: InvoiceLine[] }, now: number,
): Promise<{ invoice: InvoiceRow; events: EventRecord[] }> {
  const env = ref.environment;
  const { subtotal, amountDue } = totals(period.lines);
  const { row, created } = await insertInvoice(trx, env, {
    id: newId('in'), account_id: sub.account_id, subscription_id: sub.id, customer_id: sub.customer_id, billing_reason: period.reason,
    currency: sub.currency, period_start: new Date(period.start), period_end: new Date(period.end), lines: period.lines, subtotal, amount_due: amountDue,
  });
  if (!created) return { invoice: row, events: [] };
  const at = new Date(now);
  const paused = sub.pause_collection !== null;
  const status = paused ? 'VOID' : amountDue === 0 ? 'PAID' : 'OPEN';
  const invoice = (await updateInvoice(trx, env, row.id, ['DRAFT'], {
    status, finalized_at: at, ...(status === 'OPEN' ? { next_payment_attempt: at } : {}), ...(status === 'PAID' ? { paid_at: at } : {}),
    ...(status === 'VOID' ? { voided_at: at } : {}),
  }))!;
  const followUp = { VOID: 'invoice.voided', PAID: 'invoice.paid', OPEN: undefined }[status];
  const events = [invoiceEvent(ref, 'invoice.created', invoice), invoiceEvent(ref, 'invoice.finalized', invoice)];
  if (followUp) events.push(invoiceEvent(ref, followUp, invoice));
  return { invoice, events };
}

/** The lines of a period billed in advance: what is pending (prorations) first, then each item's period. */
async function periodLines(trx: Knex.Transaction, ref: SubscriptionRef, sub: SubscriptionRow, start: number, end: number): Promise<InvoiceLine[]> {
  const priced = await pricedItems(trx, ref.environment, sub.items);
  return [...sub.pending_lines, ...priced.map((item) => periodLine(item, start, end))];
}

/** The subscription's time now: its clock's frozen time, or the real time. */
async function startTime(deps: BillingActivityDeps, input: SubscriptionInput): Promise<number> {
  if (!input.testClockId) return Date.now();
  const clock = await findTestClock(deps.db, input.environment, input.testClockId);
  if (!clock || clock.account_id !== input.accountId) refuseBillingCommand(input, 'its test clock is not the account\'s');
  return new Date(clock.frozen_time).getTime();
}

export function lifecycleActivities(deps: BillingActivityDeps) {
  const { db, vault, config } = deps;

  return {
    async startSubscription(input: SubscriptionInput): Promise<SubscriptionClock> {
      if (!vault.sealed(BILLING_SEAL_PURPOSE, subscriptionStartText(input), input.seal) || !inOwnWorkflow(input.subscriptionId)) {
        refuseBillingCommand(input, 'not sent by the API (no valid seal)');
      }
      const ref: SubscriptionRef = input;
      const now = await startTime(deps, input);
      const priced = await pricedItems(db, input.environment, input.items);
      const { currency, interval, interval_count: count } = priced[0];
      const trialEnd = input.trialPeriodDays ? now + daysToMs(input.trialPeriodDays) : null;
      const periodEnd = trialEnd ?? addIntervals(now, interval, count, 1);
      await db.transaction(async (trx) => {
        const wrote = await insertSubscription(trx, input.environment, {
          id: input.subscriptionId, account_id: input.accountId, customer_id: input.customerId, status: trialEnd ? 'TRIALING' : 'INCOMPLETE',
          currency, interval, interval_count: count, items: input.items, default_payment_method_id: input.defaultPaymentMethodId,
          billing_cycle_anchor: new Date(trialEnd ?? now), current_period_start: new Date(now), current_period_end: new Date(periodEnd),
          trial_end: trialEnd === null ? null : new Date(trialEnd), cancel_at_period_end: input.cancelAtPeriodEnd, canceled_at: null, ended_at: null,
          pause_collection: null, pending_lines: [], notices_sent: [], latest_invoice_id: null, test_clock_id: input.testClockId ?? null,
          clock_caught_up_to: null, metadata: input.metadata,
        });
        if (!wrote) return [];
        let sub = (await lockSubscription(trx, input.environment, input.subscriptionId))!;
        const lines = trialEnd
          ? priced.map((item) => ({ ...periodLine(item, now, periodEnd), description: `Trial period for ${item.product_name}`, amount: 0 }))
          : priced.map((item) => periodLine(item, now, periodEnd));
        const { invoice, events } = await makeInvoice(trx, deps, ref, sub, { start: now, end: periodEnd, reason: 'subscription_create', lines }, now);
        sub = await updateSubscription(trx, input.environment, sub.id, { latest_invoice_id: invoice.id, ...(invoice.status === 'PAID' && !trialEnd ? { status: 'ACTIVE' } : {}) });
        await appendEvents(trx, input.environment, [subscriptionEvent(ref, 'subscription.created', sub, config), ...events]);
      });
      return readClock(db, ref);
    },

    readSubscription: (ref: SubscriptionRef) => readClock(db, ref),

    async renewSubscription(ref: SubscriptionRef, periodEnd: number, now: number): Promise<SubscriptionClock> {
      const env = ref.environment;
      return db.transaction(async (trx) => {
        const sub = (await lockSubscription(trx, env, ref.subscriptionId))!;
        if (new Date(sub.current_period_end).getTime() !== periodEnd || ENDED_SUBSCRIPTION_STATUSES.includes(sub.status)) return clockOf(trx, env, sub);
        if (sub.cancel_at_period_end) {
          const ended = await updateSubscription(trx, env, sub.id, { status: 'CANCELED', canceled_at: sub.canceled_at ?? new Date(now), ended_at: new Date(periodEnd) });
          await appendEvents(trx, env, [subscriptionEvent(ref, 'subscription.canceled', ended, config)]);
          return clockOf(trx, env, ended);
        }
        const end = periodEndAfter(new Date(sub.billing_cycle_anchor).getTime(), sub.interval, sub.interval_count, periodEnd);
        const resumes = sub.pause_collection?.resumes_at && Date.parse(sub.pause_collection.resumes_at) <= periodEnd;
        let next = await updateSubscription(trx, env, sub.id, {
          current_period_start: new Date(periodEnd), current_period_end: new Date(end), notices_sent: [], ...(resumes ? { pause_collection: null } : {}),
        });
        const events: EventRecord[] = [];
        // UNPAID: kept, not billed, until its open invoice is paid.
        if (sub.status !== 'UNPAID') {
          const lines = await periodLines(trx, ref, next, periodEnd, end);
          const made = await makeInvoice(trx, deps, ref, next, { start: periodEnd, end, reason: 'subscription_cycle', lines }, now);
          next = await updateSubscription(trx, env, sub.id, { latest_invoice_id: made.invoice.id, pending_lines: [] });
          events.push(...made.events);
        }
        events.unshift(subscriptionEvent(ref, 'subscription.updated', next, config));
        await appendEvents(trx, env, events);
        return clockOf(trx, env, next);
      });
    },

    async sendNotice(ref: SubscriptionRef, notice: 'invoice.upcoming' | 'subscription.trial_will_end'): Promise<SubscriptionClock> {
      const env = ref.environment;
      return db.transaction(async (trx) => {
        const sub = (await lockSubscription(trx, env, ref.subscriptionId))!;
        if (sub.notices_sent.includes(notice)) return clockOf(trx, env, sub);
        const next = await updateSubscription(trx, env, sub.id, { notices_sent: [...sub.notices_sent, notice] });
        const event = notice === 'subscription.trial_will_end'
          ? subscriptionEvent(ref, notice, next, config)
          : { ...subscriptionEvent(ref, notice, next, config), data: { object: await upcomingInvoice(trx, ref, next) } };
        await appendEvents(trx, env, [event]);
        return clockOf(trx, env, next);
      });
    },

    async expireIncomplete(ref: SubscriptionRef, now: number): Promise<SubscriptionClock> {
      const env = ref.environment;
      return db.transaction(async (trx) => {
        const sub = (await lockSubscription(trx, env, ref.subscriptionId))!;
        if (sub.status !== 'INCOMPLETE') return clockOf(trx, env, sub);
        const events: EventRecord[] = [];
        for (const open of await openInvoicesOf(trx, env, sub.id)) {
          const voided = await updateInvoice(trx, env, open.id, ['OPEN'], { status: 'VOID', voided_at: new Date(now), next_payment_attempt: null });
          if (voided) events.push(invoiceEvent(ref, 'invoice.voided', voided));
        }
        const ended = await updateSubscription(trx, env, sub.id, { status: 'INCOMPLETE_EXPIRED', ended_at: new Date(now) });
        events.unshift(subscriptionEvent(ref, 'subscription.updated', ended, config));
        await appendEvents(trx, env, events);
        return clockOf(trx, env, ended);
      });
    },

    async readTestClock(ref: SubscriptionRef, testClockId: string): Promise<number> {
      const clock = await findTestClock(db, ref.environment, testClockId);
      return clock ? new Date(clock.frozen_time).getTime() : Date.now();
    },
  };

  /** What the next renewal will bill, for invoice.upcoming: the invoice it will make, not yet written. */
  async function upcomingInvoice(trx: Knex.Transaction, ref: SubscriptionRef, sub: SubscriptionRow): Promise<Record<string, unknown>> {
    const start = new Date(sub.current_period_end).getTime();
    const end = periodEndAfter(new Date(sub.billing_cycle_anchor).getTime(), sub.interval, sub.interval_count, start);
    const lines = await periodLines(trx, ref, sub, start, end);
    const { subtotal, amountDue } = totals(lines);
    return {
      object: 'invoice', id: null, subscription_id: sub.id, customer_id: sub.customer_id, status: 'DRAFT', billing_reason: 'subscription_cycle',
      currency: sub.currency, period_start: iso(start), period_end: iso(end), lines, subtotal, amount_due: amountDue, next_payment_attempt: iso(start),
    };
  }
}
