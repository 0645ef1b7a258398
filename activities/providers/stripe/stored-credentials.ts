// Stripe's stored-credential parameters of a PaymentIntent create (docs/connectors.md#stored-credentials),
// apart from the adapter that sends them.

import type Stripe from 'stripe';
import type { RecurringAuthorization } from '../types';

type CreateParams = Stripe.PaymentIntentCreateParams;

/**
 * A customer-initiated first payment sets the card up for later off-session use
 * (`setup_future_usage: off_session`); a merchant-initiated one is `off_session: true` and names the
 * network transaction id of the card's first approval as its MIT exemption
 * (`payment_method_options.card.mit_exemption.network_transaction_id`, for cards not saved at Stripe).
 * The summary shows the flags and whether an id was sent, never more.
 */
export function storedCredentialParams(recurring: RecurringAuthorization | undefined): { params: Partial<CreateParams>; summary: Record<string, unknown> } {
  if (!recurring) return { params: {}, summary: {} };
  if (recurring.initiator === 'customer') return { params: { setup_future_usage: 'off_session' }, summary: { setup_future_usage: 'off_session' } };
  const id = recurring.networkTransactionId;
  // mit_exemption is outside the library's types for the pinned version; the wire form is Stripe's.
  const card = id ? { mit_exemption: { network_transaction_id: id } } as unknown as Stripe.PaymentIntentCreateParams.PaymentMethodOptions.Card : undefined;
  return {
    params: { off_session: true, ...(card ? { payment_method_options: { card } } : {}) },
    summary: { off_session: true, ...(id ? { payment_method_options: { card: { mit_exemption: { network_transaction_id: '[sent]' } } } } : {}) },
  };
}

/** Two parts of a create's parameters (or of their summaries) with their `payment_method_options.card` merged. */
export function mergedCardOptions<T extends { payment_method_options?: unknown }>(one: T, other: T): T {
  const card = (part: T) => (part.payment_method_options as { card?: Record<string, unknown> } | undefined)?.card;
  const merged = { ...card(one), ...card(other) };
  return { ...one, ...other, ...(Object.keys(merged).length ? { payment_method_options: { card: merged } } : {}) };
}
