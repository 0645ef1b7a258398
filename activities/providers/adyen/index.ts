export { createAdyenAdapter, errorOutcome, paymentOutcome, DEFAULT_RETURN_URL } from './adapter';
export type { AdyenAdapter, AdyenAdapterOptions, PaymentAnswer } from './adapter';
export { authenticationOf, parseAdyenWebhook, ADYEN_WEBHOOK_REPLY } from './notifications';
export type { AdyenCredentials } from '../../../lib/providers/adyen';
export {
  ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES, ADYEN_REFUSAL_REASONS, adyenError, adyenRefusal, adyenRefusalCodeOf,
} from './decline-codes';
export type { AdyenDecline } from './decline-codes';
