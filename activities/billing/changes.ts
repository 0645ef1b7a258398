import type { Knex } from 'knex';
import { appendEvents, type EventRecord } from '../../db/events';
import { findInvoice, openInvoicesOf, updateInvoice } from '../../db/invoices';
import { lockSubscription, pricedItems, updateSubscription, type SubscriptionPatch, type SubscriptionRow } from '../../db/subscriptions';
import { prorate } from '../../lib/billing/proration';
import {
  BILLING_SEAL_PURPOSE, subscriptionChangeText, type ChangeAnswer, type SealedChange, type SubscriptionChange, type SubscriptionClock, type SubscriptionRef,
} from '../../contracts/billing';
import { makeInvoice } from './lifecycle';
import { clockOf, inOwnWorkflow, invoiceEvent, readClock, subscriptionEvent, UNDECIDED_PAYMENT_STATUSES, type BillingActivityDeps } from './state';

type Applied = { answer: ChangeAnswer; clock: SubscriptionClock };
const refused = (code: string, message: string): ChangeAnswer => ({ applied: false, code, message });
const APPLIED: ChangeAnswer = { applied: true };

/**
 * Applies the API's changes to a subscription (docs/billing.md#changes), each in one transaction under
 * the row's lock, with its events. The workflow sends them one at a time and once per update id; each
 * checks the API's seal, so a change sent by anyone else who reaches Temporal moves nothing.
 */
export function changeActivities(deps: BillingActivityDeps, pay: (ref: SubscriptionRef, invoiceId: string, attemptCount: number, now: number) => Promise<SubscriptionClock>) {
  const { db, vault, config } = deps;

  async function inTransaction(ref: SubscriptionRef, apply: (trx: Knex.Transaction, sub: SubscriptionRow, events: EventRecord[]) => Promise<{ answer: ChangeAnswer; sub: SubscriptionRow }>): Promise<Applied> {
    const env = ref.environment;
    return db.transaction(async (trx) => {
      const sub = (await lockSubscription(trx, env, ref.subscriptionId))!;
      const events: EventRecord[] = [];
      const { answer, sub: after } = await apply(trx, sub, events);
      await appendEvents(trx, env, events);
      return { answer, clock: await clockOf(trx, env, after) };
    });
  }

  function update(ref: SubscriptionRef, change: Extract<SubscriptionChange, { kind: 'update' }>, now: number): Promise<Applied> {
    return inTransaction(ref, async (trx, sub, events) => {
      const env = ref.environment;
      const patch: SubscriptionPatch = {};
      if (change.items) {
        patch.items = change.items;
        // Prorations bill a change mid-period; a trial's period is free, so a change in it bills nothing.
        if (sub.status !== 'TRIALING') {
          const [before, after] = [await pricedItems(trx, env, sub.items), await pricedItems(trx, env, change.items)];
          const lines = prorate(before, after, new Date(sub.current_period_start).getTime(), new Date(sub.current_period_end).getTime(), now);
          patch.pending_lines = [...sub.pending_lines, ...lines];
        }
      }
      if (change.cancelAtPeriodEnd !== undefined) patch.cancel_at_period_end = change.cancelAtPeriodEnd;
      if (change.pauseCollection !== undefined) patch.pause_collection = change.pauseCollection;
      if (change.metadata !== undefined) patch.metadata = change.metadata;
      if (change.defaultPaymentMethodId !== undefined) {
        patch.default_payment_method_id = change.defaultPaymentMethodId;
        // A new card retries an invoice in dunning at once.
        for (const open of await openInvoicesOf(trx, env, sub.id)) {
          if (open.next_payment_attempt !== null) await updateInvoice(trx, env, open.id, ['OPEN'], { next_payment_attempt: new Date(now) });
        }
      }
      const after = await updateSubscription(trx, env, sub.id, patch);
      events.push(subscriptionEvent(ref, 'subscription.updated', after, config));
      return { answer: APPLIED, sub: after };
    });
  }

  function cancel(ref: SubscriptionRef, change: Extract<SubscriptionChange, { kind: 'cancel' }>, now: number): Promise<Applied> {
    return inTransaction(ref, async (trx, sub, events) => {
      const env = ref.environment;
      const start = new Date(sub.current_period_start).getTime();
      const end = new Date(sub.current_period_end).getTime();
      const credit = change.prorate && sub.status !== 'TRIALING' ? prorate(await pricedItems(trx, env, sub.items), [], start, end, now) : [];
      let after = await updateSubscription(trx, env, sub.id, {
        status: 'CANCELED', canceled_at: new Date(now), ended_at: new Date(now), pending_lines: change.invoiceNow ? [] : [...sub.pending_lines, ...credit],
      });
      if (change.invoiceNow) {
        const lines = [...sub.pending_lines, ...credit];
        const made = await makeInvoice(trx, deps, ref, after, { start: now, end: now, reason: 'subscription_cancel', lines }, now);
        after = await updateSubscription(trx, env, sub.id, { latest_invoice_id: made.invoice.id });
        events.push(...made.events);
      }
      events.unshift(subscriptionEvent(ref, 'subscription.canceled', after, config));
      return { answer: APPLIED, sub: after };
    });
  }

  /** Voids or writes off an OPEN invoice whose payment is not under way; the subscription is owed nothing more by it. */
  function closeInvoice(ref: SubscriptionRef, invoiceId: string, status: 'VOID' | 'UNCOLLECTIBLE', now: number): Promise<Applied> {
    return inTransaction(ref, async (trx, sub, events) => {
      const env = ref.environment;
      const invoice = await findInvoice(trx, env, invoiceId);
      if (!invoice || invoice.subscription_id !== sub.id) return { answer: refused('not_found', 'The invoice is not this subscription\'s.'), sub };
      if (invoice.status !== 'OPEN') return { answer: refused('invalid_state', `A ${invoice.status} invoice cannot be ${status === 'VOID' ? 'voided' : 'marked uncollectible'}.`), sub };
      if (UNDECIDED_PAYMENT_STATUSES.includes(invoice.attempts.at(-1)?.status ?? '')) return { answer: refused('payment_in_progress', 'The invoice\'s payment is under way; wait for its outcome.'), sub };
      const closed = (await updateInvoice(trx, env, invoiceId, ['OPEN'], { status, next_payment_attempt: null, ...(status === 'VOID' ? { voided_at: new Date(now) } : {}) }))!;
      events.push(invoiceEvent(ref, status === 'VOID' ? 'invoice.voided' : 'invoice.marked_uncollectible', closed));
      let after = sub;
      if ((sub.status === 'PAST_DUE' || sub.status === 'UNPAID') && (await openInvoicesOf(trx, env, sub.id)).length === 0) {
        after = await updateSubscription(trx, env, sub.id, { status: 'ACTIVE' });
        events.push(subscriptionEvent(ref, 'subscription.updated', after, config));
      }
      return { answer: APPLIED, sub: after };
    });
  }

  /** Pays an OPEN invoice now (POST /v1/invoices/{id}/pay): the attempt is made here, and answered once its walk ended. */
  async function payNow(ref: SubscriptionRef, invoiceId: string, now: number): Promise<Applied> {
    const invoice = await findInvoice(db, ref.environment, invoiceId);
    if (!invoice || invoice.subscription_id !== ref.subscriptionId) return { answer: refused('not_found', 'The invoice is not this subscription\'s.'), clock: await readClock(db, ref) };
    if (invoice.status !== 'OPEN') return { answer: refused('invalid_state', `A ${invoice.status} invoice cannot be paid.`), clock: await readClock(db, ref) };
    if (UNDECIDED_PAYMENT_STATUSES.includes(invoice.attempts.at(-1)?.status ?? '')) {
      return { answer: refused('payment_in_progress', 'The invoice\'s payment is under way; wait for its outcome.'), clock: await readClock(db, ref) };
    }
    return { answer: APPLIED, clock: await pay(ref, invoiceId, invoice.attempt_count, now) };
  }

  return {
    async applyChange(ref: SubscriptionRef, updateId: string, sealed: SealedChange, now: number): Promise<Applied> {
      if (!vault.sealed(BILLING_SEAL_PURPOSE, subscriptionChangeText(ref.subscriptionId, updateId, sealed.change), sealed.seal) || !inOwnWorkflow(ref.subscriptionId)) {
        return { answer: refused('unsealed_command', 'The change was not sent by the API.'), clock: await readClock(db, ref) };
      }
      const { change } = sealed;
      switch (change.kind) {
        case 'update': return update(ref, change, now);
        case 'cancel': return cancel(ref, change, now);
        case 'pay_invoice': return payNow(ref, change.invoiceId, now);
        case 'void_invoice': return closeInvoice(ref, change.invoiceId, 'VOID', now);
        case 'mark_uncollectible': return closeInvoice(ref, change.invoiceId, 'UNCOLLECTIBLE', now);
      }
    },
  };
}
