export { createAdyenAdapter, DEFAULT_RETURN_URL } from './adapter';
export type { AdyenAdapter, AdyenAdapterOptions } from './adapter';
export { errorOutcome, paymentOutcome } from './answers';
export type { PaymentAnswer } from './answers';
export { authenticationOf, parseAdyenWebhook, ADYEN_WEBHOOK_REPLY } from './notifications';
export type { AdyenCredentials } from '../../../lib/providers/adyen';
export {
  ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES, ADYEN_REFUSAL_REASONS, adyenError, adyenRefusal, adyenRefusalCodeOf,
} from './decline-codes';
export type { AdyenDecline } from './decline-codes';
