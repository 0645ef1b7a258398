// How the `adyen` adapter reads Adyen's answers (adapter.ts sends the requests): a /payments or
// /payments/details answer, a modification's `received`, an error body — each to a ProviderOutcome,
// held to what was asked (answer-guard.ts).

import { Types } from '@adyen/api-library';
import { guardAnswer } from '../answer-guard';
import { isObject } from '../../../lib/providers/wire';
import type { ProviderOperation, ProviderOutcome } from '../types';
import { adyenError, adyenRefusal, adyenRefusalCodeOf } from '../../../lib/providers/adyen/decline-codes';

/** What a capture, cancel, refund or reversal answers. */
export type ModificationResponse =
  | Types.checkout.PaymentCaptureResponse | Types.checkout.PaymentCancelResponse | Types.checkout.PaymentRefundResponse | Types.checkout.PaymentReversalResponse;

/** What paymentOutcome reads of a /payments or /payments/details answer. */
export interface PaymentAnswer {
  resultCode?: string;
  pspReference?: string;
  merchantReference?: string;
  amount?: { value: number; currency?: string } | null;
  refusalReason?: string;
  refusalReasonCode?: string;
  action?: unknown;
  /** Where an approval shows the card network's transaction id (`networkTxReference`). */
  additionalData?: { [key: string]: string } | null;
}

/**
 * Whether a /payments/details answer is about this charge: the `reference` our authorize sent comes back
 * as its merchantReference, and its pspReference is the one the authorize's answer gave (when it gave
 * one: `providerReference` is our own reference otherwise). An answer naming neither cannot be told apart.
 */
export function answersFor(response: PaymentAnswer, charge: { reference: string; providerReference: string }): boolean {
  if (response.merchantReference === undefined && response.pspReference === undefined) return false;
  const ours = response.merchantReference === undefined || response.merchantReference === charge.reference;
  const theirs = response.pspReference === undefined || charge.providerReference === charge.reference || response.pspReference === charge.providerReference;
  return ours && theirs;
}

/**
 * A /payments or /payments/details answer by its resultCode. `amount`: what was asked for, when the
 * answer does not say (a details answer carries no amount); `captured`: the authorize asked to capture at
 * once (captureDelayHours 0: Adyen captures by itself); `reference`: the charge's reference at Adyen when
 * the answer has no pspReference.
 */
export function paymentOutcome(
  response: PaymentAnswer, { amount, captured, reference }: { amount?: number; captured: boolean; reference: string },
): { outcome: ProviderOutcome; providerCode?: string } {
  const providerCode = response.refusalReasonCode ?? (response.refusalReason ? adyenRefusalCodeOf(response.refusalReason) : undefined);
  const message = response.refusalReason;
  const settledLater = `the AUTHORISATION notification settles it`;
  switch (response.resultCode) {
    case 'Authorised': {
      const authorized = response.amount?.value ?? amount;
      if (!response.pspReference) return { outcome: { kind: 'unknown', error: 'Authorised without a pspReference' } };
      if (authorized === undefined) return { outcome: { kind: 'unknown', error: `Authorised (pspReference ${response.pspReference}) without an amount; ${settledLater}` } };
      const networkTransactionId = response.additionalData?.networkTxReference;
      return {
        outcome: {
          kind: 'approved', providerReference: response.pspReference, authorizedAmount: authorized, capturedAmount: captured ? authorized : 0, refundedAmount: 0,
          ...(networkTransactionId ? { networkTransactionId } : {}),
        },
      };
    }
    case 'Refused': {
      const decline = adyenRefusal(providerCode ?? '');
      return { outcome: { kind: decline.decision === 'hard' ? 'hard_decline' : 'soft_decline', declineCode: decline.code, ...(message ? { message } : {}) }, providerCode };
    }
    // Adyen failed it or it was cancelled before processing: nothing was authorized; another provider may say yes.
    case 'Error':
    case 'Cancelled':
      return {
        outcome: { kind: 'soft_decline', declineCode: providerCode ? adyenRefusal(providerCode).code : 'processing_error', message: message ?? `Adyen answered ${response.resultCode}` },
        providerCode: providerCode ?? response.resultCode,
      };
    case 'RedirectShopper': {
      // 3-D Secure by redirect: the shopper's browser goes to the issuer's page (a GET) and comes back to
      // our returnUrl with a redirectResult. A POST redirect needs a page of ours that posts Adyen's data
      // from the browser: not done, so another provider may be tried.
      const redirect = redirectOf(response.action);
      if (redirect?.method === 'GET') {
        return { outcome: { kind: 'requires_action', providerReference: response.pspReference ?? reference, redirectUrl: redirect.url }, providerCode: response.resultCode };
      }
      return {
        outcome: { kind: 'soft_decline', declineCode: 'authentication_required', message: `The card requires authentication (3-D Secure) by a ${redirect ? `${redirect.method} redirect` : 'redirect without a URL'}, which is not supported.` },
        providerCode: response.resultCode,
      };
    }
    // Native 3-D Secure 2 (a threeDS2 action) runs in Adyen's web components in the shopper's browser,
    // which Switchboard does not serve: another provider may not ask.
    case 'IdentifyShopper':
    case 'ChallengeShopper':
      return {
        outcome: { kind: 'soft_decline', declineCode: 'authentication_required', message: 'The card requires native 3-D Secure 2 authentication, which needs Adyen\'s components in the shopper\'s browser.' },
        providerCode: response.resultCode,
      };
    // Received, Pending (and anything new): money may move; the AUTHORISATION notification says how it ended.
    default:
      return { outcome: { kind: 'unknown', error: `Adyen answered ${response.resultCode ?? 'no resultCode'} (pspReference ${response.pspReference ?? 'none'}); ${settledLater}` } };
  }
}

/** A redirect action's URL and method (GET when Adyen names none). */
function redirectOf(action: unknown): { url: string; method: string } | undefined {
  if (!isObject(action) || action.type !== 'redirect' || typeof action.url !== 'string') return undefined;
  return { url: action.url, method: typeof action.method === 'string' ? action.method.toUpperCase() : 'GET' };
}

/**
 * A /payments or /payments/details answer's outcome, held to the request: the payment of our reference
 * (merchantReference, when the answer names one), of the amount and currency asked for (when it states
 * them). Adyen's partial authorisation is never asked for, so an Authorised of less is no approval of ours.
 */
export function heldPayment(
  read: { outcome: ProviderOutcome; providerCode?: string }, response: PaymentAnswer, asked: { amount: { value?: number; currency?: string }; reference: string },
): { outcome: ProviderOutcome; providerCode?: string } {
  const other = response.merchantReference !== undefined && response.merchantReference !== asked.reference
    ? `payment of reference ${response.merchantReference} answered, ${asked.reference} asked` : undefined;
  const answered = { amount: response.amount?.value, currency: response.amount?.currency };
  const outcome = guardAnswer(read.outcome, { amount: asked.amount.value, currency: asked.amount.currency }, answered, other);
  return outcome === read.outcome ? read : { outcome };
}

/**
 * A modification's outcome, held to the request: on the payment asked about, under our reference, and
 * for the amount and currency asked (when the answer states them).
 */
export function heldModification(
  outcome: ProviderOutcome, response: ModificationResponse, asked: { providerReference: string; idempotencyKey: string; amount?: { value: number; currency: string } },
): ProviderOutcome {
  const answeredAmount = 'amount' in response ? response.amount : undefined;
  const other = response.paymentPspReference && response.paymentPspReference !== asked.providerReference
    ? `modification of payment ${response.paymentPspReference} answered, ${asked.providerReference} asked`
    : response.reference !== undefined && response.reference !== asked.idempotencyKey ? `modification of reference ${response.reference} answered, ${asked.idempotencyKey} asked` : undefined;
  return guardAnswer(outcome, { amount: asked.amount?.value, currency: asked.amount?.currency }, { amount: answeredAmount?.value, currency: answeredAmount?.currency }, other);
}

/** A modification answer: `received` → pending, its own pspReference the operation's; the notification says how it ended. */
export function modificationOutcome(response: ModificationResponse, providerReference: string): ProviderOutcome {
  if (String(response.status) !== 'received' || !response.pspReference) {
    return { kind: 'unknown', error: `Adyen answered status ${String(response.status)} (pspReference ${response.pspReference ?? 'none'})` };
  }
  return { kind: 'pending', providerReference: response.paymentPspReference || providerReference, operationReference: response.pspReference };
}

/**
 * An error answer (`{status, errorCode, message, errorType}`): 5xx is unknown (Adyen may have done it);
 * 401/403 the credentials; 429 later; other 4xx by the error table. A refused modification is hard:
 * asking again (the workflow's retry of a soft one) would only be refused again.
 */
export function errorOutcome(operation: ProviderOperation, status: number, body: unknown): { outcome: ProviderOutcome; providerCode?: string } {
  const fields = isObject(body) ? body : {};
  const errorCode = typeof fields.errorCode === 'string' ? fields.errorCode : undefined;
  const message = typeof fields.message === 'string' ? fields.message : `HTTP ${status}`;
  if (status >= 500) return { outcome: { kind: 'unknown', error: `HTTP ${status} ${errorCode ?? ''}: ${message}`.replace(' :', ':') }, providerCode: errorCode };
  const providerCode = errorCode ?? `http_${status}`;
  if (status === 401 || status === 403) return { outcome: { kind: 'soft_decline', declineCode: 'invalid_credentials', message }, providerCode };
  if (status === 429) return { outcome: { kind: 'soft_decline', declineCode: 'try_again_later', message }, providerCode };
  const decline = adyenError(errorCode ?? '');
  const hardOne = decline.decision === 'hard' || operation !== 'authorize';
  return { outcome: { kind: hardOne ? 'hard_decline' : 'soft_decline', declineCode: decline.code, message }, providerCode };
}
