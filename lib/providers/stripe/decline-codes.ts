// What each of Stripe's codes means for a payment (docs/connectors.md#the-decline-table), as data: our
// decline code (the one the sandbox's table uses when there is one) and the decision, hard → stop,
// soft → another provider config may say yes. Stripe's own code is kept beside ours in the charge's
// exchange record (`provider_code`).
//
// Looked up by `decline_code` first (the issuer's reason on a card_error), then by `code` (Stripe's
// error code), per https://docs.stripe.com/declines/codes and https://docs.stripe.com/error-codes.

import type { DeclineRow } from '../../payments/cascade';

/** Our decline code, recorded on the charge, with its decision and the cascade's columns (stepUp, doNotRetry). */
export type StripeDecline = DeclineRow;

const hard = (code: string, columns: Pick<DeclineRow, 'doNotRetry'> = {}): StripeDecline => ({ code, decision: 'hard', ...columns });
const soft = (code: string, columns: Pick<DeclineRow, 'stepUp'> = {}): StripeDecline => ({ code, decision: 'soft', ...columns });

export const STRIPE_DECLINE_CODES: Readonly<Record<string, StripeDecline>> = {
  // The card or the cardholder: every provider reaches the same issuer, so none will approve it.
  stolen_card: hard('stolen_card', { doNotRetry: true }),
  lost_card: hard('lost_card', { doNotRetry: true }),
  pickup_card: hard('stolen_card', { doNotRetry: true }),
  fraudulent: hard('fraudulent', { doNotRetry: true }),
  merchant_blacklist: hard('fraudulent', { doNotRetry: true }),
  expired_card: hard('expired_card'),
  incorrect_number: hard('invalid_number'),
  invalid_number: hard('invalid_number'),
  invalid_account: hard('invalid_number'),
  incorrect_cvc: hard('incorrect_cvc'),
  invalid_cvc: hard('incorrect_cvc'),
  invalid_expiry_month: hard('expired_card'),
  invalid_expiry_year: hard('expired_card'),
  // Stripe classes do_not_honor as a hard decline: the issuer refuses without saying why, and says so to every acquirer.
  do_not_honor: hard('do_not_honor'),
  generic_decline: hard('card_declined'),
  card_declined: hard('card_declined'),
  call_issuer: hard('card_declined'),
  restricted_card: hard('card_declined'),
  security_violation: hard('card_declined'),
  service_not_allowed: hard('card_declined'),
  transaction_not_allowed: hard('card_declined'),
  not_permitted: hard('card_declined'),
  no_action_taken: hard('card_declined'),
  revocation_of_authorization: hard('card_declined'),
  revocation_of_all_authorizations: hard('card_declined'),
  stop_payment_order: hard('card_declined'),
  new_account_information_available: hard('card_declined'),
  card_velocity_exceeded: hard('card_declined'),
  withdrawal_count_limit_exceeded: hard('card_declined'),
  invalid_amount: hard('card_declined'),
  // Stripe calls insufficient_funds retriable (later, by the customer), but not elsewhere: the funds are
  // the issuer's answer about the cardholder's account, which every provider reaches. Hard, as in the
  // sandbox's table.
  insufficient_funds: hard('insufficient_funds'),
  card_decline_rate_limit_exceeded: hard('card_declined'),
  // The cardholder failed (or abandoned) the issuer's challenge: every provider reaches the same issuer.
  payment_intent_authentication_failure: hard('authentication_failed'),

  // The acquirer, the network or the issuer, right now: another provider may get through.
  processing_error: soft('processing_error'),
  issuer_not_available: soft('issuer_unavailable'),
  try_again_later: soft('try_again_later'),
  reenter_transaction: soft('try_again_later'),
  approve_with_id: soft('try_again_later'),
  rate_limit: soft('try_again_later'),
  lock_timeout: soft('try_again_later'),
  // This Stripe account, not the card: another provider (or config) may accept it.
  card_not_supported: soft('card_not_supported'),
  currency_not_supported: soft('currency_not_supported'),
  testmode_decline: soft('card_declined'),
  // The issuer wants 3-D Secure before it decides: another provider (or a retry asking for a challenge) may get through.
  authentication_required: soft('authentication_required', { stepUp: true }),
  // This config's credentials or our request: another config may work.
  api_key_expired: soft('invalid_credentials'),
  authentication_error: soft('invalid_credentials'),
  permission_error: soft('invalid_credentials'),
  parameter_invalid_integer: soft('invalid_request'),
  parameter_missing: soft('invalid_request'),
  parameter_unknown: soft('invalid_request'),
  amount_too_small: soft('invalid_request'),
  amount_too_large: soft('invalid_request'),

  // Follow-up operations on an existing intent: retrying elsewhere makes no sense.
  resource_missing: hard('charge_not_found'),
  payment_intent_unexpected_state: hard('invalid_state'),
  charge_already_captured: hard('invalid_state'),
  charge_already_refunded: hard('refund_exceeds_captured'),
  charge_exceeds_source_limit: hard('refund_exceeds_captured'),
};

/** A Stripe code we have not classified: soft, as in the sandbox's table (a decline never moves money). */
export function stripeDecline(stripeCode: string): StripeDecline {
  return Object.hasOwn(STRIPE_DECLINE_CODES, stripeCode) ? STRIPE_DECLINE_CODES[stripeCode] : { code: stripeCode, decision: 'soft' };
}
