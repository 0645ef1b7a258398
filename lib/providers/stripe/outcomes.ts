// Stripe's objects as our outcomes: what the adapter's answers and the webhooks' events both read
// (docs/connectors.md#stripe). Pure.

import Stripe from 'stripe';
import type { Approved, HardDecline, ProviderOutcome, SoftDecline } from '../outcomes';
import { stripeDecline } from './decline-codes';

/** The metadata key the charge id goes under: the look-up searches it, the webhooks read it back. */
export const CHARGE_ID_METADATA = 'switchboard_charge_id';
export const REFUND_ID_METADATA = 'switchboard_refund_id';

/** A PaymentIntent as an outcome: its `status` says where it stands. */
export function intentOutcome(intent: Stripe.PaymentIntent): ProviderOutcome {
  const charge = typeof intent.latest_charge === 'object' && intent.latest_charge ? intent.latest_charge : undefined;
  // Shown on the expanded latest charge only (the authorize and the authentication's read expand it).
  const networkTransactionId = charge?.payment_method_details?.card?.network_transaction_id ?? undefined;
  const approved = (captured: number): Approved => ({
    kind: 'approved',
    providerReference: intent.id,
    authorizedAmount: intent.amount,
    capturedAmount: captured,
    refundedAmount: charge ? charge.amount_refunded : 0,
    ...(networkTransactionId ? { networkTransactionId } : {}),
  });
  switch (intent.status) {
    case 'succeeded': return approved(intent.amount_received);
    case 'requires_capture': return approved(0);
    // Voided: the authorization stands released; what was authorized is still what it was.
    case 'canceled': return approved(intent.amount_received);
    case 'requires_action': {
      // The issuer wants a challenge. Stripe hands it to us as a page to send the customer to
      // (redirect_to_url, since we give a return_url); `use_stripe_sdk` and other next actions need
      // Stripe.js in the customer's browser, which Switchboard does not serve: another provider may not ask.
      const next = intent.next_action;
      const url = next?.type === 'redirect_to_url' ? next.redirect_to_url?.url : undefined;
      if (url) return { kind: 'requires_action', providerReference: intent.id, redirectUrl: url };
      return { kind: 'soft_decline', declineCode: 'authentication_required', message: `The card requires authentication (3-D Secure) through ${next?.type ?? 'an action'}, which needs Stripe.js in the customer's browser.` };
    }
    case 'requires_payment_method': {
      const error = intent.last_payment_error;
      if (!error) return { kind: 'soft_decline', declineCode: 'card_declined', message: 'The payment intent needs another payment method.' };
      return declineOutcome(error.decline_code ?? error.code ?? 'card_declined', error.message);
    }
    // `processing` (and anything new): money may move; reconcile rather than guess.
    default: return { kind: 'unknown', error: `payment intent is ${intent.status}` };
  }
}

/**
 * An intent read once the customer is back from the challenge: as any intent (requires_payment_method
 * with payment_intent_authentication_failure → the hard authentication_failed by the table), except that
 * a canceled one never got authorized.
 */
export function authenticatedOutcome(intent: Stripe.PaymentIntent): ProviderOutcome {
  if (intent.status === 'canceled') return { kind: 'hard_decline', declineCode: 'invalid_state', message: 'The payment intent was canceled before its authentication ended.' };
  return intentOutcome(intent);
}

/** Stripe's own code behind an intent's decline: last_payment_error's decline_code, else its code. */
export function intentCode(intent: Stripe.PaymentIntent): string | undefined {
  return intent.last_payment_error?.decline_code ?? intent.last_payment_error?.code;
}

/**
 * A Refund as an outcome. `pending` (and `requires_action`, or a status Stripe adds) is not final: Stripe
 * tells the end by `refund.updated` / `refund.failed` (docs/connectors.md#webhooks).
 */
export function refundOutcome(refund: Stripe.Refund): ProviderOutcome {
  const intent = typeof refund.payment_intent === 'string' ? refund.payment_intent : refund.payment_intent?.id ?? '';
  if (refund.status === 'failed' || refund.status === 'canceled') {
    return { kind: 'hard_decline', declineCode: 'refund_failed', message: refund.failure_reason ?? `refund ${refund.status}` };
  }
  if (refund.status !== 'succeeded') return { kind: 'pending', providerReference: intent, operationReference: refund.id };
  const charge = typeof refund.charge === 'object' && refund.charge ? refund.charge : undefined;
  return {
    kind: 'approved',
    providerReference: intent,
    authorizedAmount: charge?.amount ?? refund.amount,
    capturedAmount: charge?.amount_captured ?? refund.amount,
    refundedAmount: charge?.amount_refunded ?? refund.amount,
    refundReference: refund.id,
  };
}

export function declineOutcome(stripeCode: string, message?: string): HardDecline | SoftDecline {
  const decline = stripeDecline(stripeCode);
  return { kind: decline.decision === 'hard' ? 'hard_decline' : 'soft_decline', declineCode: decline.code, ...(message ? { message } : {}) };
}

/**
 * An error Stripe answered: 5xx is unknown (Stripe may have done it), 4xx a decline by the table. An
 * idempotency error is unknown too: under our key another request ran or runs (a retry after the first
 * answer was lost, whose parameters differ once the CVC is wiped, or one still in flight), so the
 * operation may well have happened — reconcile, never decline or cascade on it.
 */
export function errorOutcome(err: InstanceType<typeof Stripe.errors.StripeError>): ProviderOutcome {
  const status = err.statusCode ?? 0;
  const idempotency = err.rawType === 'idempotency_error' || err.code === 'idempotency_key_in_use';
  if (status >= 500 || status === 0 || idempotency) return { kind: 'unknown', error: `HTTP ${status} ${err.code ?? err.rawType ?? ''}: ${err.message}`.trim() };
  const byStatus = status === 401 ? 'authentication_error' : status === 403 ? 'permission_error' : status === 429 ? 'rate_limit' : undefined;
  const stripeCode = err.decline_code ?? err.code ?? byStatus ?? err.rawType ?? `http_${status}`;
  return declineOutcome(stripeCode, err.message);
}

/**
 * Why an intent is not the one asked about — another id, or made for another charge (the charge id our
 * create put in its metadata) — or undefined when it is.
 */
export function otherIntent(intent: Stripe.PaymentIntent, expected: { id?: string; chargeId?: string }): string | undefined {
  if (expected.id !== undefined && intent.id !== expected.id) return `payment intent ${intent.id} answered, ${expected.id} asked`;
  const chargeId = intent.metadata?.[CHARGE_ID_METADATA];
  if (expected.chargeId !== undefined && chargeId !== expected.chargeId) return `payment intent of charge ${chargeId ?? 'none'} answered, ${expected.chargeId} asked`;
  return undefined;
}

/** Why a refund is not the one asked about (another intent's, or made for another refund of ours), or undefined. */
export function otherRefund(refund: Stripe.Refund, expected: { intentId: string; refundId: string }): string | undefined {
  const intent = typeof refund.payment_intent === 'string' ? refund.payment_intent : refund.payment_intent?.id;
  if (intent !== expected.intentId) return `refund of payment intent ${intent ?? 'none'} answered, ${expected.intentId} asked`;
  const refundId = refund.metadata?.[REFUND_ID_METADATA];
  if (refundId !== expected.refundId) return `refund ${refundId ?? 'none'} answered, ${expected.refundId} asked`;
  return undefined;
}
