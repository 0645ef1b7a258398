/**
 * The payments contract's activities (re-exported by contracts/payments.ts): what the payment
 * workflow asks of Postgres and the processors, each step's arguments and answer. Ids and facts only.
 */
import { PERMANENT_DATA_ERROR, type DataErrorFacts } from '../lib/data-errors';
import type { DeclineRow } from '../lib/payments/cascade';
import type { Environment, ProviderEventSignal, RequestContext } from './temporal';
import type { AttemptOutcome, ConfirmInput, PaymentInput, PaymentStatus, PendingOperation, RecurringUse } from './payment-rules';

// ---------------------------------------------------------------------------------------------------
// The activities the workflow calls (activities/payments builds them, `satisfies PaymentActivities`)

export interface PaymentRef {
  paymentId: string;
  accountId: string;
  workspaceId: string;
  environment: Environment;
}

export interface PlannedCandidate {
  providerConfigId: string;
  providerId: string;
  methodId: string;
  estimatedFee: number | null;
}

/** A confirm's plan to make: the confirm as the API sealed it (its seal checked before the plan), for one payment. */
export interface PlanArgs extends PaymentRef, ConfirmInput {
  routingPlanId: string;
}

/** A create that carries a confirm: the payment to write and the confirm's plan to make, in one step. */
export interface CreateAndPlanArgs {
  payment: PaymentInput;
  plan: PlanArgs;
}

/** The first attempt of a create's confirm, less what its plan decides (the candidate, the plan's id). */
export type FirstAttemptArgs = Omit<AttemptArgs, 'routingPlanId' | 'candidate' | 'lastCandidate' | 'candidateIndex' | 'threeDSecure'>;

export interface CreateAndAuthorizeArgs extends CreateAndPlanArgs {
  attempt: FirstAttemptArgs;
}

export interface CreateAndAuthorizeResult extends PlanResult {
  /** The first candidate's attempt; absent when the plan has none, or when the attempt failed for good (the walk makes it again). */
  first?: AttemptResult;
}

/** The arguments of a plan's first attempt, as the walk makes them (attempt 1, the first candidate, no 3-D Secure asked yet). */
export function firstAttemptOf(attempt: FirstAttemptArgs, plan: PlanResult, candidate: PlannedCandidate): AttemptArgs {
  return { ...attempt, routingPlanId: plan.routingPlanId, candidate, lastCandidate: plan.candidates.length === 1 };
}

export interface PlanResult {
  routingPlanId: string;
  /** Empty when no provider can take the payment (the payment is then FAILED: no_eligible_provider). */
  candidates: PlannedCandidate[];
}

export interface AttemptArgs extends PaymentRef {
  chargeId: string;
  routingPlanId: string;
  attemptNo: number;
  /** The candidate's index in the plan (absent: attemptNo - 1; a step-up retry repeats a candidate). */
  candidateIndex?: number;
  candidate: PlannedCandidate;
  paymentMethodId: string;
  /** Capture right after an approval (auto_capture). */
  capture: boolean;
  /** No candidate follows this one: a soft decline ends the payment as FAILED. */
  lastCandidate: boolean;
  /** The merchant's return_url of this confirm (shown in next_action). */
  returnUrl?: string;
  /**
   * 3-D Secure: `requested` asks the issuer for a challenge (the step-up retry); `authenticatedBy` names
   * an earlier charge of this payment whose successful authentication is passed on (no second challenge).
   */
  threeDSecure?: { requested?: boolean; authenticatedBy?: string };
  /**
   * The payment's stored-credential use (its start's `recurring`): the attempt sends the processor the
   * flags, and for a merchant-initiated one the card's network transaction id. Absent: a plain payment.
   */
  recurring?: RecurringUse;
  context: RequestContext;
}

export interface AttemptResult {
  outcome: AttemptOutcome;
  declineCode?: string;
  /** The customer authenticated (3-D Secure) on this charge: a later candidate gets the result. */
  authenticated?: boolean;
  paymentStatus: PaymentStatus;
  /**
   * Captured with the authorization at a processor that may still report that capture failed: how long
   * (ms) the workflow listens for it (the adapter's captureFailureWindowMs). Absent: SUCCEEDED is final.
   */
  captureFailureWindowMs?: number;
  /**
   * The charge was given up (abandonAuthentication) at a processor that may still report it authorized:
   * how long (ms) the workflow of a final payment keeps listening for that, to reverse it (the adapter's
   * lateAuthorizationWindowMs). Absent: the abandon was conclusive.
   */
  lateAuthorizationWindowMs?: number;
  /**
   * A decline's row in the adapter's table (its cascade columns: step-up, do not retry), for the walk's
   * cascade rule (lib/payments/cascade.ts nextStep). Absent for other outcomes.
   */
  decline?: DeclineRow;
}

export interface ReconcileResult extends AttemptResult {
  /** The provider could not tell yet (lookup failed, or the original call may still arrive): ask again later. */
  pending: boolean;
}

/**
 * Which of the charge's captures (or voids) the workflow sends, counting from 1: the processor's
 * idempotency key is `<charge>:capture` for the first and `<charge>:capture:<n>` for each later one, so a
 * capture sent again after the processor refused one reaches it instead of its stored refusal. Retries
 * of one command keep their key. Absent (a void of a payment with no charge): the first key.
 */
export type OperationSequence = { sequence?: number };

/** The idempotency key of a charge's `sequence`-th capture or void (see OperationSequence). */
export function operationKey(chargeId: string, operation: 'capture' | 'void', sequence = 1): string {
  return sequence > 1 ? `${chargeId}:${operation}:${sequence}` : `${chargeId}:${operation}`;
}

/** A command as the update carried it (what its seal covers), for the activity to check before it calls the processor. */
export interface SealedCommand { amount?: number; reason?: string; seal?: string }

export interface CaptureArgs extends PaymentRef, OperationSequence { chargeId: string; amount: number; command?: SealedCommand; context: RequestContext }
export interface CaptureResult {
  paymentStatus: PaymentStatus;
  capturedAmount: number;
  /** The processor only received the capture: its notification completes it (settleOperation). */
  pending?: boolean;
  /** The processor refused it at once: recorded (`last_error`, `charge.capture_failed`), the payment still AUTHORIZED. */
  declined?: { declineCode: string; message?: string };
}

/** `command`: the cancel update's, checked; absent when the workflow's own expiry cancels. */
export interface CancelArgs extends PaymentRef, OperationSequence { chargeId?: string; reason: string; command?: SealedCommand; context: RequestContext }

export interface CancelResult {
  /** The processor only received the void: its notification completes the cancel (settleOperation). */
  pending?: boolean;
}

/** A reconciliation; with the processor's notification about the charge when one has arrived. */
export interface ReconcileArgs extends AttemptArgs { notification?: ProviderEventSignal }

/** How a wait for the customer's authentication ends: the processor's notification, or the customer's return. */
export interface AuthenticationArgs extends AttemptArgs { notification?: ProviderEventSignal; returned?: boolean }

/** An authentication given up: timed out (the payment FAILED), or the payment is being canceled. */
export interface AbandonArgs extends AttemptArgs { reason: 'authentication_timeout' | 'canceled'; command?: SealedCommand }

/** The processor's notification about a pending capture or void, to be recorded. */
export interface SettleArgs extends PaymentRef {
  pending: PendingOperation;
  notification: ProviderEventSignal;
  context: RequestContext;
}

export interface SettleResult {
  paymentStatus: PaymentStatus;
  capturedAmount: number;
  /** The signal named no stored event about the operation (forged): nothing changed, it still awaits its notification. */
  pending?: boolean;
}

/** A notification about the capture of a SUCCEEDED payment's charge, made with its authorization (captureFailed). */
export interface CaptureFailureArgs extends PaymentRef {
  chargeId: string;
  notification: ProviderEventSignal;
  context: RequestContext;
}

/**
 * What the notification did: `reverted` (the payment AUTHORIZED again, its capture failed, now or by an
 * earlier try); `ignored` (no stored event behind it, or one that reports no failure: nothing changed);
 * `needs_attention` (the charge has refunds, or is no longer as captured: nothing changed, an operator must look).
 */
export interface CaptureFailureResult {
  outcome: 'reverted' | 'ignored' | 'needs_attention';
  paymentStatus: PaymentStatus;
  /** Why it needs attention (statuses only). */
  message?: string;
}

/** The needs_attention reason of a payment whose capture failed after the fact while its charge had refunds. */
export const CAPTURE_FAILED_AFTER_REFUND = 'capture_failed_after_refund';

/** A notification about a charge the workflow gave up while its customer authenticated: an authorization, or the void's outcome. */
export interface LateAuthorizationArgs extends PaymentRef {
  chargeId: string;
  notification: ProviderEventSignal;
  context: RequestContext;
}

/**
 * What the notification did, by what the stored notifications of the charge say: `reversed` (the processor
 * authorized it and the void did not go through: reversed now, or by an earlier try); `voided` (the void went
 * through: nothing is held); `waiting` (no authorization stored yet: a later one is reversed); `ignored` (no
 * stored event behind the signal); `refused` (the processor refused the reversal: an operator must look).
 */
export interface LateAuthorizationResult {
  outcome: 'reversed' | 'voided' | 'waiting' | 'ignored' | 'refused';
  /** Why the reversal was refused (the processor's decline). */
  message?: string;
}

/** The needs_attention reason of a payment whose given-up charge the processor authorized and then refused to reverse. */
export const LATE_AUTHORIZATION_NOT_REVERSED = 'late_authorization_not_reversed';


/**
 * Failure types the payment activities throw: `not_found` (a provider config gone) and
 * `capture_declined` are final; `capture_pending` and `void_pending` are retried. `permanent_data_error`
 * (any activity, from the worker's interceptor) is final: Postgres refuses the write on every attempt.
 */
export const PAYMENT_ACTIVITY_FAILURES = {
  notFound: 'not_found', captureDeclined: 'capture_declined', capturePending: 'capture_pending', voidPending: 'void_pending',
  permanentDataError: PERMANENT_DATA_ERROR,
} as const;

/** A payment its workflow stops acting on, to flag for an operator (flagPaymentNeedsAttention). */
export interface NeedsAttentionArgs extends PaymentRef {
  /** Why: `permanent_data_error`, `capture_failed_after_refund` (CAPTURE_FAILED_AFTER_REFUND) or `late_authorization_not_reversed`. */
  reason: string;
  /** The transition (or `create`; `refund` for a refund of the payment) that met it. */
  step: string;
  /** The status the workflow knows the payment in (the row keeps its own); a refund's workflow knows none. */
  status?: PaymentStatus;
  /** The refund whose workflow stopped (the payment is flagged on its behalf). */
  refundId?: string;
  /** What the failure said: SQLSTATE and object names, never values. */
  failure: { message: string; facts?: DataErrorFacts };
}

export interface PaymentActivities {
  /** Writes the payment row (and a guest customer) and `payment_intent.created`. Idempotent. */
  createPaymentRecord(input: PaymentInput): Promise<void>;
  /** Builds and stores the routing plan, and moves the payment to PROCESSING (or FAILED). Idempotent. */
  planRoute(args: PlanArgs): Promise<PlanResult>;
  /** The row, its plan and the plan's first attempt, for a create that carries a confirm. Idempotent. */
  createPaymentPlanAndAuthorize(args: CreateAndAuthorizeArgs): Promise<CreateAndAuthorizeResult>;
  /** One attempt: the charge row, the provider's authorize (idempotent on the charge id), the outcome. */
  authorizeCharge(args: AttemptArgs): Promise<AttemptResult>;
  /** Settles a charge whose authorize got no answer: by the processor's notification, else by asking it. */
  reconcileCharge(args: ReconcileArgs): Promise<ReconcileResult>;
  /** Manual capture of an AUTHORIZED payment (partial allowed). */
  captureCharge(args: CaptureArgs): Promise<CaptureResult>;
  /** Cancels a payment; an AUTHORIZED one has its authorization voided first. */
  cancelPayment(args: CancelArgs): Promise<CancelResult>;
  /** Records the processor's notification about a pending capture or void. Idempotent. */
  settleOperation(args: SettleArgs): Promise<SettleResult>;
  /** Takes a SUCCEEDED payment back to AUTHORIZED when a stored notification says its capture failed. Idempotent. */
  settleCaptureFailure(args: CaptureFailureArgs): Promise<CaptureFailureResult>;
  /**
   * Completes an authorization that waits for the customer: by the processor's notification, or by
   * asking the processor once the customer is back. `requires_action` still when the customer is not done.
   */
  completeAuthentication(args: AuthenticationArgs): Promise<AttemptResult>;
  /** Gives up a wait for the customer: the charge is voided at the processor unless it completed meanwhile. */
  abandonAuthentication(args: AbandonArgs): Promise<AttemptResult>;
  /** Reverses (cancel or refund) a given-up charge a stored notification says the processor authorized after all. Idempotent. */
  reverseLateAuthorization(args: LateAuthorizationArgs): Promise<LateAuthorizationResult>;
  /** Flags the payment `needs_attention` and writes one `payment.needs_attention` notification. Idempotent. */
  flagPaymentNeedsAttention(args: NeedsAttentionArgs): Promise<void>;
}
