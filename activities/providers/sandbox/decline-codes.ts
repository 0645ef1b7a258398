// What each simulator decline code means for the payment (docs/sandbox-processor.md#adapters-activitiesproviders): hard → stop,
// soft → another provider may succeed. Data, not scattered ifs.

export type DeclineDecision = 'hard' | 'soft';

export const DECLINE_CODES: Readonly<Record<string, DeclineDecision>> = {
  // The card or the cardholder: no provider will approve it.
  insufficient_funds: 'hard',
  card_declined: 'hard',
  expired_card: 'hard',
  incorrect_cvc: 'hard',
  invalid_number: 'hard',
  stolen_card: 'hard',
  lost_card: 'hard',
  fraudulent: 'hard',
  do_not_honor: 'hard',
  // The cardholder failed (or abandoned) 3-D Secure: another provider would only challenge them again.
  authentication_failed: 'hard',

  // The provider or the issuer, right now: another provider may get through.
  processing_error: 'soft',
  // This config's api key was refused: another config may work.
  invalid_credentials: 'soft',
  issuer_unavailable: 'soft',
  try_again_later: 'soft',
  provider_unavailable: 'soft',
  // The issuer wants 3-D Secure: the authorization may be retried asking for it (the step-up).
  authentication_required: 'soft',
  // Our request shape, not the card: another config may work. (An api key refused, HTTP 401, is soft
  // whatever its code: the adapter reads it from the status; docs/sandbox-processor.md#adapters-activitiesproviders.)
  invalid_request: 'soft',

  // Follow-up operations on an existing charge: retrying elsewhere makes no sense.
  refund_exceeds_captured: 'hard',
  amount_exceeds_authorized: 'hard',
  charge_not_found: 'hard',
  invalid_state: 'hard',
  idempotency_key_reused: 'hard',
};

// An unknown code is treated as soft: a decline never moves money, so trying the next candidate cannot
// double-charge, while a hard stop on a code we have not classified would lose a payment that another
// provider would approve. max_attempts bounds the cost.
export const UNKNOWN_CODE_DECISION: DeclineDecision = 'soft';

export function declineDecision(code: string): DeclineDecision {
  return Object.hasOwn(DECLINE_CODES, code) ? DECLINE_CODES[code] : UNKNOWN_CODE_DECISION;
}
