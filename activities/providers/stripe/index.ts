export { createStripeAdapter, DEFAULT_RETURN_URL, SEARCH_SETTLE_MS, STRIPE_API_VERSION } from './adapter';
export type { StripeAdapterOptions } from './adapter';
export { authenticatedOutcome, errorOutcome, intentOutcome, refundOutcome, CHARGE_ID_METADATA, REFUND_ID_METADATA } from './outcomes';
export { parseStripeWebhook, STRIPE_WEBHOOK_REPLY } from './notifications';
export type { StripeCredentials } from '../../../lib/providers/stripe';
export { STRIPE_DECLINE_CODES, stripeDecline } from './decline-codes';
export type { StripeDecline } from './decline-codes';
