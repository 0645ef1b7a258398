import type { Knex } from 'knex';
import { findAccountSetting } from '../../db/accounts';
import { appendEvents, type EventRecord } from '../../db/events';
import { claimInvoiceAttempt, findInvoice, openInvoicesOf, updateInvoice, type InvoiceRow } from '../../db/invoices';
import { findPayment } from '../../db/payments';
import type { PaymentRow } from '../../db/payment-rows';
import { findSubscription, lockSubscription, updateSubscription, type SubscriptionRow } from '../../db/subscriptions';
import { newId, newUlid } from '../../lib/ids';
import { BILLING_SETTINGS_KEY, nextDunningStep, parseBillingSettings } from '../../lib/billing/dunning';
import { isAlreadyStarted } from '../../workflows/client';
import { withHeartbeat } from '../heartbeat';
import { startPayment } from '../../workflows/payments/client';
import { carriedSeal, PAYMENT_SEAL_PURPOSE, paymentCommand, startCommand, type PaymentInput } from '../../contracts/payments';
import type { InvoiceAttempt, SubscriptionClock, SubscriptionRef, SubscriptionStatus } from '../../contracts/billing';
import { clockOf, invoiceEvent, readClock, subscriptionEvent, temporalOf, UNDECIDED_PAYMENT_STATUSES, type BillingActivityDeps } from './state';

/** Statuses a paid invoice brings a subscription back from (a trial's end counts: it is now paid for). */
const REVIVED_BY_PAYMENT: readonly SubscriptionStatus[] = ['INCOMPLETE', 'TRIALING', 'PAST_DUE', 'UNPAID'];

/**
 * Paying invoices and settling them from their payments (docs/billing.md#collection): each attempt is
 * an ordinary Switchboard payment on the customer's saved card, made as a stored-credential transaction
 * (the first invoice's by the customer, renewals by the merchant, off-session), and the invoice reads
 * its outcome from the payment's row, never from a message.
 */
export function collectionActivities(deps: BillingActivityDeps) {
  const { db, vault, config } = deps;

  /** The payment of the invoice's attempt, sealed as the API seals a start and a confirm. */
  function paymentOf(ref: SubscriptionRef, sub: SubscriptionRow, invoice: InvoiceRow, paymentId: string) {
    const input: PaymentInput = {
      paymentId, accountId: ref.accountId, workspaceId: ref.workspaceId, environment: ref.environment, amount: Number(invoice.amount_due),
      currency: invoice.currency, autoCapture: true, secureMode: 'NONE', installments: 1, customerId: sub.customer_id,
      invoice: { invoiceId: invoice.id, subscriptionId: sub.id },
      recurring: { model: 'subscription', initiator: invoice.billing_reason === 'subscription_create' && invoice.attempt_count <= 1 ? 'customer' : 'merchant' },
      metadata: { invoice_id: invoice.id, subscription_id: sub.id }, routing: {},
      authExpiryMs: config.authExpiryMs, paymentExpiryMs: config.paymentExpiryMs, authenticationTimeoutMs: config.authenticationTimeoutMs, context: ref.context,
    };
    const commandId = `cmd_${newUlid()}`;
    const paymentMethodId = sub.default_payment_method_id;
    const confirmSeal = vault.seal(PAYMENT_SEAL_PURPOSE, paymentCommand({ kind: 'confirm', paymentId, commandId, paymentMethodId }));
    return {
      input: { ...input, seal: vault.seal(PAYMENT_SEAL_PURPOSE, paymentCommand(startCommand(input))) },
      confirm: { paymentMethodId, seal: carriedSeal(commandId, confirmSeal), context: ref.context },
    };
  }

  async function pay(ref: SubscriptionRef, invoiceId: string, attemptCount: number, now: number): Promise<SubscriptionClock> {
    const env = ref.environment;
    const invoice = await findInvoice(db, env, invoiceId);
    const sub = await findSubscription(db, env, ref.subscriptionId);
    if (!sub || !invoice || invoice.subscription_id !== ref.subscriptionId || invoice.status !== 'OPEN') return readClock(db, ref);
    const attempt: InvoiceAttempt = { payment_id: newId('pay'), status: 'PROCESSING', decline_code: null, at: new Date(now).toISOString() };
    const claimed = await claimInvoiceAttempt(db, env, invoiceId, attemptCount, attempt);
    // A retry of this activity finds the attempt its first try claimed: that payment, not a second.
    const paying = claimed ?? (await findInvoice(db, env, invoiceId))!;
    if (paying.attempt_count !== attemptCount + 1 || !paying.payment_id) return readClock(db, ref);
    const { input, confirm } = paymentOf(ref, sub, paying, paying.payment_id);
    try {
      await withHeartbeat(startPayment(await temporalOf(deps), input, confirm));
    } catch (err) {
      if (!isAlreadyStarted(err)) throw err;
    }
    return settle(ref, invoiceId, now);
  }

  async function settle(ref: SubscriptionRef, invoiceId: string, now: number): Promise<SubscriptionClock> {
    const env = ref.environment;
    return db.transaction(async (trx) => {
      const sub = (await lockSubscription(trx, env, ref.subscriptionId))!;
      const invoice = await findInvoice(trx, env, invoiceId);
      const payment = invoice?.payment_id ? await findPayment(trx, env, invoice.payment_id) : undefined;
      const last = invoice?.attempts.at(-1);
      if (!invoice || invoice.status !== 'OPEN' || !payment || !last || last.payment_id !== payment.id || !UNDECIDED_PAYMENT_STATUSES.includes(last.status)) {
        return clockOf(trx, env, sub);
      }
      if (payment.status === 'SUCCEEDED') return paid(trx, ref, sub, invoice, payment, now);
      if (payment.status === 'FAILED' || payment.status === 'CANCELED') return failed(trx, ref, sub, invoice, payment, now);
      if (payment.status === 'REQUIRES_ACTION' && last.status !== 'REQUIRES_ACTION') return actionRequired(trx, ref, sub, invoice, payment);
      return clockOf(trx, env, sub);
    });
  }

  async function paid(trx: Knex.Transaction, ref: SubscriptionRef, sub: SubscriptionRow, invoice: InvoiceRow, payment: PaymentRow, now: number): Promise<SubscriptionClock> {
    const env = ref.environment;
    const done = (await updateInvoice(trx, env, invoice.id, ['OPEN'], {
      status: 'PAID', amount_paid: Number(payment.amount), paid_at: new Date(now), next_payment_attempt: null, attempts: withLast(invoice, payment, null),
    }))!;
    const events: EventRecord[] = [invoiceEvent(ref, 'invoice.paid', done)];
    let next = sub;
    const stillOwed = (await openInvoicesOf(trx, env, sub.id)).length > 0;
    if (REVIVED_BY_PAYMENT.includes(sub.status) && !stillOwed) {
      next = await updateSubscription(trx, env, sub.id, { status: 'ACTIVE' });
      events.push(subscriptionEvent(ref, 'subscription.updated', next, config));
    }
    await appendEvents(trx, env, events);
    return clockOf(trx, env, next);
  }

  async function failed(trx: Knex.Transaction, ref: SubscriptionRef, sub: SubscriptionRow, invoice: InvoiceRow, payment: PaymentRow, now: number): Promise<SubscriptionClock> {
    const env = ref.environment;
    const declineCode = payment.last_error?.decline_code ?? null;
    const attempts = withLast(invoice, payment, declineCode);
    const failures = attempts.filter((a) => a.status === 'FAILED' || a.status === 'CANCELED');
    const settings = parseBillingSettings((await findAccountSetting(trx, ref.accountId, BILLING_SETTINGS_KEY))?.value);
    // A first invoice is not dunned: the subscription stays INCOMPLETE until its customer pays (or 23 h pass).
    const first = sub.status === 'INCOMPLETE';
    const step = first || sub.status === 'CANCELED' ? { exhausted: true as const, reason: 'final_decline' as const } : nextDunningStep(settings, Date.parse(failures[0].at), failures.length, declineCode);
    const retryAt = 'retryAt' in step ? new Date(step.retryAt) : null;
    const exhaustedToCanceled = !retryAt && !first && sub.status !== 'CANCELED' && settings.when_exhausted === 'CANCELED';
    const after = (await updateInvoice(trx, env, invoice.id, ['OPEN'], {
      attempts, next_payment_attempt: retryAt, ...(exhaustedToCanceled ? { status: 'UNCOLLECTIBLE' } : {}),
    }))!;
    const events: EventRecord[] = [invoiceEvent(ref, 'invoice.payment_failed', after, { decline_code: declineCode })];
    const status: SubscriptionStatus = first || sub.status === 'CANCELED' ? sub.status : retryAt ? 'PAST_DUE' : settings.when_exhausted;
    let next = sub;
    if (status !== sub.status) {
      next = await updateSubscription(trx, env, sub.id, status === 'CANCELED' ? { status, canceled_at: new Date(now), ended_at: new Date(now) } : { status });
      events.push(subscriptionEvent(ref, status === 'CANCELED' ? 'subscription.canceled' : 'subscription.updated', next, config));
    }
    await appendEvents(trx, env, events);
    return clockOf(trx, env, next);
  }

  async function actionRequired(trx: Knex.Transaction, ref: SubscriptionRef, sub: SubscriptionRow, invoice: InvoiceRow, payment: PaymentRow): Promise<SubscriptionClock> {
    const env = ref.environment;
    const url = payment.next_action?.redirect_to_url.url ?? null;
    const after = (await updateInvoice(trx, env, invoice.id, ['OPEN'], { attempts: withLast(invoice, payment, null), hosted_payment_url: url }))!;
    const events: EventRecord[] = [invoiceEvent(ref, 'invoice.payment_action_required', after, { hosted_payment_url: url })];
    let next = sub;
    if (sub.status === 'ACTIVE' || sub.status === 'TRIALING') {
      next = await updateSubscription(trx, env, sub.id, { status: 'PAST_DUE' });
      events.push(subscriptionEvent(ref, 'subscription.updated', next, config));
    }
    await appendEvents(trx, env, events);
    return clockOf(trx, env, next);
  }

  return { pay, settle };
}

/** The invoice's attempts with the last one's status (and decline code) as its payment has it now. */
function withLast(invoice: InvoiceRow, payment: PaymentRow, declineCode: string | null): InvoiceAttempt[] {
  return invoice.attempts.map((a, i) => (i === invoice.attempts.length - 1 ? { ...a, status: payment.status, decline_code: declineCode } : a));
}
