// What a processor's answer to one operation means, in the provider-adapter contract
// (activities/providers/types.ts). Outcomes flow into workflow history: they never hold card data or a secret.

/** The provider's state of the charge after a successful operation. */
export interface Approved {
  kind: 'approved';
  /** The provider's id for the charge. */
  providerReference: string;
  authorizedAmount: number;
  capturedAmount: number;
  refundedAmount: number;
  /** The provider's id for the refund (refund operations only). */
  refundReference?: string;
  /**
   * The card network's id of this authorization (Visa's transaction id, Mastercard's trace id), where the
   * processor shows it: a saved card keeps its first one, which merchant-initiated renewals reference.
   */
  networkTransactionId?: string;
}

/** The issuer or provider said no, for good: stop, do not try another provider. */
export interface HardDecline {
  kind: 'hard_decline';
  declineCode: string;
  message?: string;
}

/** The provider said no for now (processing error, issuer unavailable): another provider may say yes. */
export interface SoftDecline {
  kind: 'soft_decline';
  declineCode: string;
  message?: string;
}

/** The request did not reach the provider, or the provider failed it (5xx): safe to retry or try another provider. */
export interface TransportError {
  kind: 'transport_error';
  error: string;
}

/**
 * The request was sent but no answer came back (timeout, connection lost mid-call). The charge may or may
 * not exist: NEVER cascade on this; reconcile with getStatus (same idempotency key) until it answers.
 */
export interface UnknownOutcome {
  kind: 'unknown';
  error: string;
}

/**
 * The processor received the request and will tell its outcome later, by notification (Adyen's captures,
 * cancels and refunds; a Stripe refund still `pending`). Only capture, void and refund answer with it.
 */
export interface PendingOutcome {
  kind: 'pending';
  /** The processor's id of the charge the operation is on. */
  providerReference: string;
  /** The processor's id of the operation itself (Adyen's modification pspReference, Stripe's re_…). */
  operationReference?: string;
}

/**
 * The issuer wants the cardholder to authenticate (3-D Secure) before it decides: the customer's browser
 * goes to `redirectUrl` (GET), and the processor sends it back to the authorize's `returnUrl`. Only
 * authorize answers with it; `completeAuthentication` (or the processor's notification) tells the end.
 */
export interface RequiresAction {
  kind: 'requires_action';
  /** The processor's id of the charge waiting for the customer. */
  providerReference: string;
  /** Where the customer authenticates: the processor's or issuer's challenge page. */
  redirectUrl: string;
}

export type ProviderOutcome = Approved | HardDecline | SoftDecline | TransportError | UnknownOutcome | PendingOutcome | RequiresAction;
export type OutcomeKind = ProviderOutcome['kind'];
