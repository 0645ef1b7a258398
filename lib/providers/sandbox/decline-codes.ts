// What each simulator decline code means for the payment (docs/sandbox-processor.md#adapters-activitiesproviders): hard → stop,
// soft → another provider may succeed; stepUp → retry with 3-D Secure asked for; doNotRetry → never at
// another processor. Data, not scattered ifs; the cascade (lib/payments/cascade.ts) reads the columns.

import type { DeclineDecision, DeclineRow } from '../../payments/cascade';

export type { DeclineDecision, DeclineRow };

const hard = (code: string, columns: Pick<DeclineRow, 'doNotRetry'> = {}): DeclineRow => ({ code, decision: 'hard', ...columns });
const soft = (code: string, columns: Pick<DeclineRow, 'stepUp'> = {}): DeclineRow => ({ code, decision: 'soft', ...columns });

export const DECLINE_CODES: Readonly<Record<string, DeclineRow>> = {
  // The card or the cardholder: no provider will approve it.
  insufficient_funds: hard('insufficient_funds'),
  card_declined: hard('card_declined'),
  expired_card: hard('expired_card'),
  incorrect_cvc: hard('incorrect_cvc'),
  invalid_number: hard('invalid_number'),
  // A stolen or lost card, or fraud: trying it at another processor is itself the harm.
  stolen_card: hard('stolen_card', { doNotRetry: true }),
  lost_card: hard('lost_card', { doNotRetry: true }),
  fraudulent: hard('fraudulent', { doNotRetry: true }),
  do_not_honor: hard('do_not_honor'),
  // The cardholder failed (or abandoned) 3-D Secure: another provider would only challenge them again.
  authentication_failed: hard('authentication_failed'),

  // The provider or the issuer, right now: another provider may get through.
  processing_error: soft('processing_error'),
  // This config's api key was refused: another config may work.
  invalid_credentials: soft('invalid_credentials'),
  issuer_unavailable: soft('issuer_unavailable'),
  try_again_later: soft('try_again_later'),
  provider_unavailable: soft('provider_unavailable'),
  // The issuer wants 3-D Secure: the authorization may be retried asking for it (the step-up).
  authentication_required: soft('authentication_required', { stepUp: true }),
  // Our request shape, not the card: another config may work. (An api key refused, HTTP 401, is soft
  // whatever its code: the adapter reads it from the status; docs/sandbox-processor.md#adapters-activitiesproviders.)
  invalid_request: soft('invalid_request'),

  // Follow-up operations on an existing charge: retrying elsewhere makes no sense.
  refund_exceeds_captured: hard('refund_exceeds_captured'),
  amount_exceeds_authorized: hard('amount_exceeds_authorized'),
  charge_not_found: hard('charge_not_found'),
  invalid_state: hard('invalid_state'),
  idempotency_key_reused: hard('idempotency_key_reused'),
};

/**
 * The codes the simulator's `decline_code` knob may force on every new authorization (the card and issuer
 * declines of the table, hard and soft): a config's credentials and the simulator refuse any other.
 */
export const AUTHORIZATION_DECLINE_CODES = [
  'card_declined', 'insufficient_funds', 'expired_card', 'incorrect_cvc', 'invalid_number', 'stolen_card', 'lost_card', 'fraudulent', 'do_not_honor',
  'processing_error', 'issuer_unavailable', 'try_again_later', 'authentication_required',
] as const satisfies readonly (keyof typeof DECLINE_CODES)[];

// An unknown code is treated as soft: a decline never moves money, so trying the next candidate cannot
// double-charge, while a hard stop on a code we have not classified would lose a payment that another
// provider would approve. max_attempts bounds the cost.
export const UNKNOWN_CODE_DECISION: DeclineDecision = 'soft';

export function declineDecision(code: string): DeclineDecision {
  return declineRow(code).decision;
}

/** A simulator code's row; one we have not classified is soft, without step-up. */
export function declineRow(code: string): DeclineRow {
  return Object.hasOwn(DECLINE_CODES, code) ? DECLINE_CODES[code] : { code, decision: UNKNOWN_CODE_DECISION };
}
