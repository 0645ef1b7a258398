// What Adyen's refusals and errors mean for a payment (docs/connectors.md#the-decline-table-1), as data:
// our decline code (the sandbox's where one exists) and the decision, hard → stop, soft → another
// provider config may say yes. Adyen's own code is kept beside ours in the exchange record
// (`provider_code`): the refusalReasonCode of a Refused payment, the errorCode of an error answer.
//
// Refusal reasons per https://docs.adyen.com/development-resources/refusal-reasons; error codes per
// https://docs.adyen.com/development-resources/error-codes.

import type { DeclineRow } from '../../payments/cascade';

/** Our decline code, recorded on the charge, with its decision and the cascade's columns (stepUp, doNotRetry). */
export type AdyenDecline = DeclineRow;

const hard = (code: string, columns: Pick<DeclineRow, 'doNotRetry'> = {}): AdyenDecline => ({ code, decision: 'hard', ...columns });
const soft = (code: string, columns: Pick<DeclineRow, 'stepUp'> = {}): AdyenDecline => ({ code, decision: 'soft', ...columns });

/** Adyen's published refusal reasons: refusalReasonCode → refusalReason (the text a Refused answer and an AUTHORISATION notification carry). */
export const ADYEN_REFUSAL_REASONS: Readonly<Record<string, string>> = {
  2: 'Refused',
  3: 'Referral',
  4: 'Acquirer Error',
  5: 'Blocked Card',
  6: 'Expired Card',
  7: 'Invalid Amount',
  8: 'Invalid Card Number',
  9: 'Issuer Unavailable',
  10: 'Not supported',
  11: '3D Not Authenticated',
  12: 'Not enough balance',
  14: 'Acquirer Fraud',
  15: 'Cancelled',
  16: 'Shopper Cancelled',
  17: 'Invalid Pin',
  18: 'Pin tries exceeded',
  19: 'Pin validation not possible',
  20: 'FRAUD',
  21: 'Not Submitted',
  22: 'FRAUD-CANCELLED',
  23: 'Transaction Not Permitted',
  24: 'CVC Declined',
  25: 'Restricted Card',
  26: 'Revocation Of Auth',
  27: 'Declined Non Generic',
  28: 'Withdrawal amount exceeded',
  29: 'Withdrawal count exceeded',
  31: 'Issuer Suspected Fraud',
  32: 'AVS Declined',
  33: 'Card requires online pin',
  34: 'No checking account available on Card',
  35: 'No savings account available on Card',
  36: 'Mobile pin required',
  37: 'Contactless fallback',
  38: 'Authentication required',
  39: 'RReq not received from DS',
  40: 'Current AID is in Penalty Box',
  41: 'CVM Required Restart Payment',
  42: '3DS Authentication Error',
  43: 'Online PIN required',
  44: 'Try another interface',
  46: 'Transaction blocked by Adyen to prevent excessive retry fees',
};

/** refusalReasonCode → ours. */
export const ADYEN_REFUSAL_CODES: Readonly<Record<string, AdyenDecline>> = {
  // The card or the cardholder: every provider reaches the same issuer, so none will approve it.
  2: hard('card_declined'),
  3: hard('card_declined'),
  5: hard('card_declined'),
  6: hard('expired_card'),
  7: hard('card_declined'),
  8: hard('invalid_number'),
  // As in the sandbox's and Stripe's tables: the balance is the issuer's answer about the account.
  12: hard('insufficient_funds'),
  // The shopper walked away: not a reason to charge them elsewhere.
  16: hard('shopper_cancelled'),
  17: hard('incorrect_pin'),
  18: hard('incorrect_pin'),
  23: hard('card_declined'),
  24: hard('incorrect_cvc'),
  25: hard('card_declined'),
  26: hard('card_declined'),
  27: hard('card_declined'),
  28: hard('card_declined'),
  29: hard('card_declined'),
  32: hard('incorrect_address'),
  34: hard('card_declined'),
  35: hard('card_declined'),
  // Suspected fraud, whoever suspects it (issuer, acquirer, Adyen's risk rules): never cascade it.
  14: hard('fraudulent', { doNotRetry: true }),
  20: hard('fraudulent', { doNotRetry: true }),
  22: hard('fraudulent', { doNotRetry: true }),
  31: hard('fraudulent', { doNotRetry: true }),
  // The scheme's limit on retrying a declined card: another provider's attempt is a retry too.
  46: hard('card_declined'),
  // 3D Not Authenticated: the cardholder failed (or abandoned) the issuer's challenge, which every provider reaches.
  11: hard('authentication_failed'),

  // The acquirer, the network or the issuer, right now: another provider may get through.
  4: soft('processing_error'),
  9: soft('issuer_unavailable'),
  15: soft('processing_error'),
  19: soft('processing_error'),
  21: soft('processing_error'),
  37: soft('processing_error'),
  40: soft('processing_error'),
  44: soft('processing_error'),
  // This merchant account or acquirer does not take it: another provider may.
  10: soft('card_not_supported'),
  // Strong customer authentication (3-D Secure, a PIN) is not done yet: try the next provider (or ask
  // for a challenge).
  33: soft('authentication_required', { stepUp: true }),
  36: soft('authentication_required', { stepUp: true }),
  38: soft('authentication_required', { stepUp: true }),
  39: soft('authentication_required', { stepUp: true }),
  41: soft('authentication_required', { stepUp: true }),
  42: soft('authentication_required', { stepUp: true }),
  43: soft('authentication_required', { stepUp: true }),
};

/** errorCode of an error answer (HTTP 4xx, `{status, errorCode, message, errorType}`) → ours. */
export const ADYEN_ERROR_CODES: Readonly<Record<string, AdyenDecline>> = {
  // The card data we sent: the same at every provider.
  101: hard('invalid_number'),
  103: hard('incorrect_cvc'),
  129: hard('expired_card'),
  // This config's credentials or merchant account: another config may work.
  '000': soft('invalid_credentials'),
  '010': soft('invalid_credentials'),
  901: soft('invalid_credentials'),
  // Our request or what this account takes: another provider may accept it.
  100: soft('invalid_request'),
  130: soft('invalid_request'),
  137: soft('invalid_request'),
  702: soft('invalid_request'),
  138: soft('currency_not_supported'),
  905: soft('card_not_supported'),
  // A modification of a payment Adyen does not know.
  167: hard('charge_not_found'),
};

/** A refusal by its refusalReasonCode; a code we have not classified is soft, as in the sandbox's table. */
export function adyenRefusal(refusalReasonCode: string): AdyenDecline {
  return Object.hasOwn(ADYEN_REFUSAL_CODES, refusalReasonCode) ? ADYEN_REFUSAL_CODES[refusalReasonCode] : soft('card_declined');
}

const CODE_BY_REASON = new Map(Object.entries(ADYEN_REFUSAL_REASONS).map(([code, text]) => [text.toLowerCase(), code]));

/** The refusalReasonCode of a refusal reason text (a notification carries the text only), if it is a published one. */
export function adyenRefusalCodeOf(reason: string): string | undefined {
  return CODE_BY_REASON.get(reason.trim().toLowerCase());
}

/** An error answer by its errorCode; one we have not classified is soft (a decline never moves money). */
export function adyenError(errorCode: string): AdyenDecline {
  return Object.hasOwn(ADYEN_ERROR_CODES, errorCode) ? ADYEN_ERROR_CODES[errorCode] : soft('invalid_request');
}
