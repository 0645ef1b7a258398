import type { PaymentStatus } from '../../contracts/payments';

// What the hosted page shows for a session and its payment, decided in one place (pure, unit-tested).

/** The fields of a session the page's state depends on. */
export interface SessionFacts {
  status: 'OPEN' | 'COMPLETE' | 'EXPIRED';
  expires_at: Date | string;
}

/** The fields of its payment the page's state depends on (the row, not the API's view of it). */
export interface PaymentFacts {
  status: PaymentStatus;
  last_error: { code: string } | null;
  next_action: { redirect_to_url?: { url: string } } | null;
}

export type PageState =
  | { kind: 'open'; message?: string }
  | { kind: 'authenticate'; url: string }
  | { kind: 'processing' }
  | { kind: 'paid' }
  | { kind: 'expired' }
  | { kind: 'closed'; message: string };

/** A payment that has taken the customer's money (or holds it, authorized): the session is paid. */
const PAID: readonly PaymentStatus[] = ['SUCCEEDED', 'AUTHORIZED', 'PARTIALLY_REFUNDED', 'REFUNDED'];

export const TOO_MANY_ATTEMPTS = 'This payment has been declined too many times and cannot be attempted again. Return to the shop to start over.';
export const TOO_MANY_DECLINES = 'Too many declined attempts. Please wait a while before you try again.';

/**
 * The customer's words for why the last attempt failed. Every issuer's decline reads the same ("Your card
 * was declined."): which code it was (a wrong security code, no funds) is what a card tester wants to
 * learn from a page anyone can open, so it never shows here.
 */
export function failureMessage(code: string | undefined): string {
  switch (code) {
    case 'authentication_failed':
    case 'authentication_timeout':
      return 'Your bank could not confirm this payment. Try again, or use another card.';
    case 'no_eligible_provider':
    case 'payment_method_unavailable':
      return 'This card cannot be used for this payment. Please use another card.';
    default:
      return 'Your card was declined.';
  }
}

/** The customer's words for a confirm the API refused before any processor saw it. */
export function refusalMessage(reason: string): string {
  switch (reason) {
    case 'too_many_declines':
    case 'rate_limited':
      return TOO_MANY_DECLINES;
    case 'invalid_card':
      return 'Check your card details.';
    case 'no_eligible_provider':
      return failureMessage(reason);
    default:
      return 'This payment could not be started. Please try again in a moment.';
  }
}

/**
 * The page for a session: paid wins over everything (the money moved, whatever the session's row says
 * yet); then an ended session (expired, or its payment canceled) shows no form; then the payment's own
 * step (the bank's page, processing); else the form, with the last failure in the customer's words.
 */
export function pageState(session: SessionFacts, payment: PaymentFacts | undefined, now: Date = new Date()): PageState {
  if (session.status === 'COMPLETE' || (payment && PAID.includes(payment.status))) return { kind: 'paid' };
  if (session.status === 'EXPIRED' || payment?.status === 'CANCELED') return { kind: 'expired' };
  // The session's workflow writes its row before the payment's: the payment is moments away.
  if (!payment) return { kind: 'processing' };
  if (payment.status === 'REQUIRES_ACTION' && payment.next_action?.redirect_to_url?.url) {
    return { kind: 'authenticate', url: payment.next_action.redirect_to_url.url };
  }
  if (payment.status === 'PROCESSING' || payment.status === 'REQUIRES_ACTION') return { kind: 'processing' };
  if (payment.status === 'FAILED' && payment.last_error?.code === 'too_many_attempts') return { kind: 'closed', message: TOO_MANY_ATTEMPTS };
  // Past its expiry, before its workflow has marked it: no new attempt starts on it.
  if (new Date(session.expires_at).getTime() <= now.getTime()) return { kind: 'expired' };
  if (payment.status === 'FAILED') return { kind: 'open', message: failureMessage(payment.last_error?.code) };
  return { kind: 'open' };
}
