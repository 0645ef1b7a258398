export { createAdyenAdapter, DEFAULT_RETURN_URL } from './adapter';
export type { AdyenAdapter, AdyenAdapterOptions } from './adapter';
export { errorOutcome, paymentOutcome } from './answers';
export type { PaymentAnswer } from './answers';
export { authenticationOf, parseAdyenWebhook, ADYEN_WEBHOOK_REPLY } from '../../../lib/providers/adyen/notifications';
export type { AdyenCredentials } from '../../../lib/providers/adyen/credentials';
export {
  ADYEN_ERROR_CODES, ADYEN_REFUSAL_CODES, ADYEN_REFUSAL_REASONS, adyenError, adyenRefusal, adyenRefusalCodeOf,
} from '../../../lib/providers/adyen/decline-codes';
export type { AdyenDecline } from '../../../lib/providers/adyen/decline-codes';
