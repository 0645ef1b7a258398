// Stripe's webhooks (docs/connectors.md#webhooks): the `Stripe-Signature` checked by the official library
// over the exact bytes received, the one event of a request normalized to a ProcessorEvent. Pure: the
// API stores what this returns and signals the workflows.

import Stripe from 'stripe';
import type { StripeCredentials } from './credentials';
import { redactSecrets } from '../redact';
import type { NotifiedOperation, ProcessorEvent, WebhookRequest, WebhookVerdict } from '../notification-types';
import type { DisputeFunds, DisputeNotice, DisputeReason, DisputeStatus } from '../disputes';
import { CHARGE_ID_METADATA, declineOutcome, intentOutcome, REFUND_ID_METADATA, refundOutcome } from './outcomes';

/** What Stripe expects back: any 2xx; the body is not read. */
export const STRIPE_WEBHOOK_REPLY = { status: 200, body: '{"received":true}', contentType: 'application/json' } as const;

/** The fields of a card a stored event keeps (a charge's payment_method_details.card, a PaymentMethod's card). */
const CARD_FIELDS = ['brand', 'last4', 'exp_month', 'exp_year'];
/** Left out of a stored event altogether (the redaction in ../exchange masks card and credential names too). */
const DROPPED = new Set(['client_secret']);

type Notice = Omit<ProcessorEvent, 'eventId' | 'type' | 'payload'>;

export function parseStripeWebhook(request: WebhookRequest): WebhookVerdict {
  const secret = (request.credentials as Partial<StripeCredentials>).webhook_secret;
  if (typeof secret !== 'string' || secret === '') return { verified: false, error: 'the provider config has no webhook_secret' };
  const header = request.headers['stripe-signature'];
  if (!header) return { verified: false, error: 'no Stripe-Signature header' };
  let event: unknown;
  try {
    // The library's check: HMAC-SHA256 of `${t}.${body}` among the header's v1 signatures, t at most
    // 300 s old (its default tolerance, against replays).
    event = Stripe.webhooks.constructEvent(request.rawBody, header, secret);
  } catch (err) {
    if (err instanceof Stripe.errors.StripeSignatureVerificationError) return { verified: false, error: firstLine(err.message) };
    return { verified: false, error: `the body is not JSON: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!isEvent(event)) return { verified: false, error: 'the body is not a Stripe event' };
  return {
    verified: true,
    events: [{ eventId: event.id, type: event.type, ...notice(event), ...(event.livemode ? { live: true } : {}), payload: storedEvent(event) }],
    rejected: 0,
    reply: { ...STRIPE_WEBHOOK_REPLY },
  };
}

/**
 * What an event reports on (docs/connectors.md#webhooks has the table). Events that report no outcome
 * of ours (created, requires_action, processing, charge.*, anything else) still name what they are about.
 */
function notice(event: Stripe.Event): Notice {
  switch (event.type) {
    case 'payment_intent.amount_capturable_updated':
      return approvedNotice(event.data.object, 'authorize', 'requires_capture');
    case 'payment_intent.succeeded': {
      // An intent succeeds on a manual capture and on an authorization that captured at once.
      const intent = event.data.object;
      return approvedNotice(intent, intent.capture_method === 'manual' ? 'capture' : 'authorize', 'succeeded');
    }
    case 'payment_intent.payment_failed':
      return declinedNotice(event.data.object);
    case 'payment_intent.canceled':
      return approvedNotice(event.data.object, 'void', 'canceled');
    // requires_action reports nothing: the authorize's answer already carried the challenge, and its end
    // comes as amount_capturable_updated, succeeded or payment_failed (payment_intent_authentication_failure
    // when the cardholder failed it).
    case 'payment_intent.created':
    case 'payment_intent.requires_action':
    case 'payment_intent.processing':
      return intentIds(event.data.object);
    case 'refund.created':
    case 'refund.updated':
    case 'refund.failed':
    case 'charge.refund.updated':
      return refundNotice(event.data.object);
    case 'charge.dispute.created':
    case 'charge.dispute.updated':
    case 'charge.dispute.closed':
    case 'charge.dispute.funds_withdrawn':
    case 'charge.dispute.funds_reinstated':
      return disputeNotice(event.data.object, event.type, event.created);
    default:
      return {};
  }
}

function intentIds(intent: Stripe.PaymentIntent): Notice {
  const chargeId = intent.metadata?.[CHARGE_ID_METADATA];
  return { ...(chargeId ? { chargeId } : {}), providerReference: intent.id };
}

/** The operation went through when the intent the event carries stands where that operation leaves it. */
function approvedNotice(intent: Stripe.PaymentIntent, operation: NotifiedOperation, status: Stripe.PaymentIntent.Status): Notice {
  const outcome = intentOutcome(intent);
  return intent.status === status && outcome.kind === 'approved' ? { ...intentIds(intent), operation, outcome } : intentIds(intent);
}

/** An authorization refused: the intent's last_payment_error, by the decline table (decline_code first, then code). */
function declinedNotice(intent: Stripe.PaymentIntent): Notice {
  const error = intent.last_payment_error;
  const providerCode = error?.decline_code ?? error?.code ?? 'card_declined';
  return { ...intentIds(intent), operation: 'authorize', outcome: declineOutcome(providerCode, error?.message), providerCode };
}

/** A refund's end: succeeded → approved, failed or canceled → refund_failed; pending or requires_action → not yet. */
function refundNotice(refund: Stripe.Refund): Notice {
  const refundId = refund.metadata?.[REFUND_ID_METADATA];
  const intent = typeof refund.payment_intent === 'string' ? refund.payment_intent : refund.payment_intent?.id;
  const about: Notice = { ...(refundId ? { refundId } : {}), ...(intent ? { providerReference: intent } : {}) };
  const outcome = refundOutcome(refund);
  if (outcome.kind === 'approved') return { ...about, operation: 'refund', outcome };
  if (outcome.kind === 'hard_decline') return { ...about, operation: 'refund', outcome, providerCode: refund.failure_reason ?? refund.status ?? 'failed' };
  return about;
}

// ---------------------------------------------------------------------------------------------------
// Disputes (https://docs.stripe.com/disputes/api): every dispute event carries the whole dispute

/** Stripe's dispute statuses, as ours. */
const DISPUTE_STATUS: Record<string, DisputeStatus> = {
  warning_needs_response: 'WARNING_NEEDS_RESPONSE', warning_under_review: 'WARNING_UNDER_REVIEW', warning_closed: 'WARNING_CLOSED',
  needs_response: 'NEEDS_RESPONSE', under_review: 'UNDER_REVIEW', won: 'WON', lost: 'LOST',
};

/** Stripe's reasons that are ours by name; the others (bank_cannot_process, customer_initiated, noncompliant, …) are `general`. */
const DISPUTE_REASON: Record<string, DisputeReason> = {
  fraudulent: 'fraudulent', product_not_received: 'product_not_received', product_unacceptable: 'product_unacceptable',
  duplicate: 'duplicate', subscription_canceled: 'subscription_canceled', unrecognized: 'unrecognized',
  credit_not_processed: 'credit_not_processed', debit_not_authorized: 'unrecognized',
};

/**
 * A dispute event as a DisputeNotice. The disputed payment is named by its PaymentIntent (what our charge
 * stores as provider_reference); our charge id only when the charge or intent came expanded with our
 * metadata. Funds events tell the money from the dispute's newest balance transaction of their kind.
 */
function disputeNotice(dispute: Stripe.Dispute, type: string, created: number): Notice {
  const intent = dispute.payment_intent;
  const charge = dispute.charge;
  const reference = typeof intent === 'string' ? intent : intent?.id ?? (typeof charge === 'string' ? charge : charge?.id);
  const chargeId = (typeof charge === 'object' ? charge?.metadata?.[CHARGE_ID_METADATA] : undefined)
    ?? (typeof intent === 'object' ? intent?.metadata?.[CHARGE_ID_METADATA] : undefined);
  const status = DISPUTE_STATUS[dispute.status];
  const dueBy = dispute.evidence_details?.due_by;
  const funds = type === 'charge.dispute.funds_withdrawn' ? disputeFunds(dispute, 'withdrawn')
    : type === 'charge.dispute.funds_reinstated' ? disputeFunds(dispute, 'reinstated') : undefined;
  const notice: DisputeNotice = {
    processorDisputeId: dispute.id,
    ...(reference ? { providerReference: reference } : {}),
    ...(chargeId ? { chargeId } : {}),
    ...(status ? { status } : {}),
    ...(typeof dispute.reason === 'string' ? { reason: DISPUTE_REASON[dispute.reason] ?? 'general', processorReason: dispute.reason } : {}),
    ...(Number.isInteger(dispute.amount) ? { amount: dispute.amount } : {}),
    ...(typeof dispute.currency === 'string' ? { currency: dispute.currency.toUpperCase() } : {}),
    // due_by is 0 or null when the issuer takes no answer.
    ...(typeof dueBy === 'number' && dueBy > 0 ? { evidenceDueBy: new Date(dueBy * 1000).toISOString() } : {}),
    ...(typeof dispute.status === 'string' ? { isInquiry: dispute.status.startsWith('warning_') || dispute.payment_method_details?.card?.case_type === 'inquiry' } : {}),
    ...(funds ? { funds } : {}),
    occurredAt: new Date(created * 1000).toISOString(),
  };
  return { ...(chargeId ? { chargeId } : {}), ...(reference ? { providerReference: reference } : {}), dispute: notice };
}

/**
 * The money of a funds event: the newest balance transaction taking money (withdrawn: a negative amount,
 * its fee the dispute fee) or giving it back (reinstated: a positive amount, a negative fee when the fee
 * is returned). Amount and fee are shown positive, as moved in that direction.
 */
function disputeFunds(dispute: Stripe.Dispute, kind: DisputeFunds['kind']): DisputeFunds | undefined {
  const transactions = Array.isArray(dispute.balance_transactions) ? dispute.balance_transactions : [];
  const found = transactions.filter((t) => typeof t === 'object' && t !== null && (kind === 'withdrawn' ? t.amount < 0 : t.amount > 0)).at(-1);
  if (!found) return undefined;
  return { kind, amount: Math.abs(found.amount), fee: Math.abs(found.fee ?? 0), currency: String(found.currency ?? dispute.currency).toUpperCase() };
}

function isEvent(value: unknown): value is Stripe.Event {
  if (typeof value !== 'object' || value === null) return false;
  const { id, type, data } = value as { id?: unknown; type?: unknown; data?: { object?: unknown } };
  return typeof id === 'string' && typeof type === 'string' && typeof data?.object === 'object' && data.object !== null;
}

/** The event as stored: a card keeps brand, last4 and expiry only; client secrets are gone. */
function storedEvent(event: Stripe.Event): Record<string, unknown> {
  return redactSecrets(withoutCardData(event)) as Record<string, unknown>;
}

function withoutCardData(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutCardData);
  if (typeof value !== 'object' || value === null) return value;
  const kept: [string, unknown][] = [];
  for (const [key, child] of Object.entries(value)) {
    if (DROPPED.has(key)) continue;
    if (key === 'card' && typeof child === 'object' && child !== null && !Array.isArray(child)) {
      kept.push([key, Object.fromEntries(Object.entries(child).filter(([field]) => CARD_FIELDS.includes(field)))]);
    } else {
      kept.push([key, withoutCardData(child)]);
    }
  }
  return Object.fromEntries(kept);
}

function firstLine(text: string): string {
  return text.split('\n')[0].trim();
}
