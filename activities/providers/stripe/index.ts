export { createStripeAdapter, DEFAULT_RETURN_URL, SEARCH_SETTLE_MS, STRIPE_API_VERSION } from './adapter';
export type { StripeAdapterOptions } from './adapter';
export { authenticatedOutcome, errorOutcome, intentOutcome, refundOutcome, CHARGE_ID_METADATA, REFUND_ID_METADATA } from '../../../lib/providers/stripe/outcomes';
export { parseStripeWebhook, STRIPE_WEBHOOK_REPLY } from '../../../lib/providers/stripe/notifications';
export type { StripeCredentials } from '../../../lib/providers/stripe/credentials';
export { STRIPE_DECLINE_CODES, stripeDecline } from '../../../lib/providers/stripe/decline-codes';
export type { StripeDecline } from '../../../lib/providers/stripe/decline-codes';
