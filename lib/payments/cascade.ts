// The cascade rule: what a payment's walk does after one attempt's outcome. One pure function, read by
// the activity that records the outcome (does the payment stay PROCESSING?) and by the workflow's walk
// (what does it do next?), so the two can never disagree. Modelled on Hyperswitch's gsm rows: the
// decline table gives each code a decision and whether a step-up may help.

/** How a decline code is classed: hard → no provider will approve it, soft → another provider may. */
export type DeclineDecision = 'hard' | 'soft';

/** One row of an adapter's decline table (lib/providers/<identifier>/decline-codes.ts). */
export interface DeclineRow {
  /** Our decline code, recorded on the charge. */
  code: string;
  decision: DeclineDecision;
  /** The issuer wants the cardholder authenticated: the same candidate once more, with 3-D Secure asked for. */
  stepUp?: boolean;
  /** Never try this card at another processor (a stolen card, fraud): the walk stops whatever the decision. */
  doNotRetry?: boolean;
}

/** An attempt's outcome, as the walk sees it once the adapter has classed it. */
export type AttemptOutcomeKind = 'approved' | 'soft_decline' | 'hard_decline' | 'transport_error' | 'unknown' | 'requires_action';

export interface CascadeInput {
  outcome: AttemptOutcomeKind;
  /** The decline's row (soft and hard declines); absent for other outcomes. */
  decline?: DeclineRow;
  /** No candidate follows this one in the routing plan. */
  lastCandidate: boolean;
  /** This attempt already asked for 3-D Secure (it was a step-up, or the merchant asked): no second step-up. */
  stepUpAsked: boolean;
}

/**
 * What the walk does next:
 * - `stop`: the walk is over. `approved`: the payment is authorized (or captured); `declined`: a hard
 *   decline (or a do-not-retry one) failed it; `exhausted`: the last candidate failed too.
 * - `next_candidate`: this charge failed, the payment stays PROCESSING, the plan's next candidate is tried.
 * - `step_up`: this charge failed, the payment stays PROCESSING, the same candidate is tried again with
 *   3-D Secure asked for.
 * - `reconcile`: the outcome is unknown (the charge may exist): ask the processor until it tells; never cascade.
 * - `await_authentication`: the customer authenticates (3-D Secure) before the issuer decides.
 */
export type NextStep =
  | { kind: 'stop'; because: 'approved' | 'declined' | 'exhausted' }
  | { kind: 'next_candidate' }
  | { kind: 'step_up' }
  | { kind: 'reconcile' }
  | { kind: 'await_authentication' };

/** The cascade rule (see NextStep); table-tested in test/unit/cascade.test.ts. */
export function nextStep(input: CascadeInput): NextStep {
  switch (input.outcome) {
    case 'approved':
      return { kind: 'stop', because: 'approved' };
    case 'hard_decline':
      return { kind: 'stop', because: 'declined' };
    case 'unknown':
      return { kind: 'reconcile' };
    case 'requires_action':
      return { kind: 'await_authentication' };
    case 'soft_decline':
    case 'transport_error':
      return afterSoftFailure(input);
  }
}

/** A soft decline or a transport error: step up once if the row says so, else the next candidate, if any. */
function afterSoftFailure({ decline, lastCandidate, stepUpAsked }: CascadeInput): NextStep {
  if (decline?.doNotRetry) return { kind: 'stop', because: 'declined' };
  // A step-up even on the last candidate: the same candidate is tried again, so none is needed after it.
  if (decline?.stepUp && !stepUpAsked) return { kind: 'step_up' };
  return lastCandidate ? { kind: 'stop', because: 'exhausted' } : { kind: 'next_candidate' };
}

/** The walk goes on after this step: the payment stays PROCESSING (the charge alone has failed). */
export function walkGoesOn(step: NextStep): boolean {
  return step.kind === 'next_candidate' || step.kind === 'step_up';
}
