/**
 * The payments contract (docs/payments.md): the workflow `payment/<pay_id>`, its input, updates and
 * query, the statuses and the transitions between them, and the activities it calls. Imported by the
 * workflow (inside Temporal's sandbox) and by the API, activities and ops CLI alike, so it stays free of
 * Node and I/O. Everything here carries ids and facts, never a card number, CVC or credential.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import { PERMANENT_DATA_ERROR, type DataErrorFacts } from '../../lib/data-errors';
import { PROVIDER_EVENT_SIGNAL, type Environment, type ProviderEventSignal, type RequestContext } from '../contract';

export const paymentWorkflowId = (paymentId: string) => `payment/${paymentId}`;

// ---------------------------------------------------------------------------------------------------
// Statuses and the state machine

export const PAYMENT_STATUSES = [
  'CREATED', 'PROCESSING', 'REQUIRES_ACTION', 'AUTHORIZED', 'SUCCEEDED', 'FAILED', 'CANCELED', 'PARTIALLY_REFUNDED', 'REFUNDED',
] as const;

export type PaymentStatus = (typeof PAYMENT_STATUSES)[number];

/**
 * Everything that moves a payment inside its workflow: the three commands, the two expiry timers and
 * the confirm's walk. `from`: the statuses it may start from (anything else is `409 invalid_state`,
 * told by the update validators, and by the API before it vaults a card); `to`: where it can leave the
 * payment. Refunds move a SUCCEEDED payment on outside the workflow (docs/refunds.md).
 */
export const PAYMENT_TRANSITIONS = {
  confirm: { from: ['CREATED', 'FAILED'], to: ['PROCESSING'] },
  /**
   * The routing plan's attempts; PROCESSING stays only when the walk broke on an internal error;
   * REQUIRES_ACTION while the customer authenticates (the walk goes on from there).
   */
  walk: { from: ['PROCESSING'], to: ['AUTHORIZED', 'SUCCEEDED', 'FAILED', 'PROCESSING', 'REQUIRES_ACTION'] },
  capture: { from: ['AUTHORIZED'], to: ['SUCCEEDED'] },
  /** From REQUIRES_ACTION: the authentication is abandoned (and the charge voided at the processor) first. */
  cancel: { from: ['CREATED', 'FAILED', 'AUTHORIZED', 'REQUIRES_ACTION'], to: ['CANCELED'] },
  /** PAYMENT_EXPIRY after the start: a payment that never succeeded is canceled (`expired`). */
  paymentExpiry: { from: ['CREATED', 'FAILED'], to: ['CANCELED'] },
  /** AUTH_EXPIRY after the authorization: an uncaptured one is voided (`authorization_expired`). */
  authExpiry: { from: ['AUTHORIZED'], to: ['CANCELED'] },
  /**
   * A capture or void the processor only received (Adyen) completes by its notification: captured or
   * voided, or refused (the payment stays AUTHORIZED).
   */
  settle: { from: ['AUTHORIZED'], to: ['SUCCEEDED', 'CANCELED', 'AUTHORIZED'] },
  /**
   * The processor reports a capture made with the authorization failed after all (Adyen's CAPTURE_FAILED,
   * within the adapter's captureFailureWindowMs): the money was not taken, the authorization stands.
   */
  captureFailed: { from: ['SUCCEEDED'], to: ['AUTHORIZED'] },
} as const satisfies Record<string, { from: readonly PaymentStatus[]; to: readonly PaymentStatus[] }>;

export type PaymentTransition = keyof typeof PAYMENT_TRANSITIONS;

/** Whether `transition` may start from `status` (a status as read from a row is a plain string). */
export function allows(transition: PaymentTransition, status: string): boolean {
  return (PAYMENT_TRANSITIONS[transition].from as readonly string[]).includes(status);
}

/** Whether `transition` may leave the payment in `status`. */
export function leadsTo(transition: PaymentTransition, status: PaymentStatus): boolean {
  return (PAYMENT_TRANSITIONS[transition].to as readonly PaymentStatus[]).includes(status);
}

/** Statuses from which the workflow takes no more commands and ends (once a capture-failure watch, if any, is over). */
export const FINAL_PAYMENT_STATUSES: readonly PaymentStatus[] = ['SUCCEEDED', 'CANCELED'];

/**
 * The `type`s of the failures an update answers with (the command client reads them by type): a
 * transition the payment's status (or a command running) does not allow, and a capture above what was
 * authorized.
 */
export const PAYMENT_FAILURES = {
  invalidState: 'invalid_state', amountExceedsCapturable: 'amount_exceeds_capturable',
  /** The processor refused the capture at once (the payment stays AUTHORIZED, its `last_error` says why). */
  captureDeclined: 'capture_declined',
} as const;

// ---------------------------------------------------------------------------------------------------
// The workflow: input, updates, query

export interface RoutingHintsInput {
  provider_config_ids?: string[];
  exclude_provider_config_ids?: string[];
  max_attempts?: number;
}

export interface PaymentInput {
  paymentId: string;
  accountId: string;
  workspaceId: string;
  environment: Environment;
  amount: number;
  currency: string;
  autoCapture: boolean;
  secureMode: 'NONE' | 'PREFERRED' | 'REQUIRED';
  installments: number;
  customerId?: string;
  /**
   * A guest customer for the activity to write with the payment row: only in the input of payments created
   * before the API wrote the guest's row itself and gave the workflow its id as `customerId` (contact
   * details stay out of history). Kept so that such payments, still running, write their customer.
   */
  guestCustomer?: GuestCustomerInput;
  checkoutSessionId?: string;
  metadata: Record<string, string>;
  routing: RoutingHintsInput;
  /** Durations in milliseconds (AUTH_EXPIRY, PAYMENT_EXPIRY). */
  authExpiryMs: number;
  paymentExpiryMs: number;
  /** AUTHENTICATION_TIMEOUT in milliseconds (absent in histories from before it: one hour). */
  authenticationTimeoutMs?: number;
  /**
   * Set by every start since the create got lean: the row and a create's confirm's plan are written by
   * one local activity, and the payment's expiry timer is armed only once the payment waits. Absent in
   * histories from before, which replay the steps they took (a version in the input, not `patched()`:
   * a patch costs every workflow a search-attribute upsert, a visibility write in the server).
   */
  leanCreate?: boolean;
  /**
   * Set by every start since authorizations moved into the workflow task: each attempt of a confirm's
   * walk (`authorizeCharge`) runs as a local activity. Absent in histories from before, which replay
   * the scheduled activities they recorded.
   */
  authorizeInTask?: boolean;
  /**
   * Set by every start since a create's confirm makes its first attempt with the row: the row, the plan
   * and the plan's first attempt run as one local activity (`createPaymentPlanAndAuthorize`), one workflow
   * activation and one local activity fewer. Only with `leanCreate` and `authorizeInTask`. Absent in
   * histories from before, which replay the two local activities they recorded.
   */
  authorizeWithRow?: boolean;
  /**
   * Set by every start since charge and plan ids draw from a random stream of their own (see mintId):
   * tracing's span ids, drawn from Math.random on an update's first validation and on signals, no longer
   * shift them. Absent in histories from before, which replay the ids they minted from Math.random.
   */
  idStream?: boolean;
  /**
   * The API's seal of what the start decided (`paymentCommand` kind `start`): the first
   * activity refuses a start without a valid one, so a workflow started by anyone else moves nothing.
   */
  seal?: string;
  context: RequestContext;
}

export interface GuestCustomerInput { id: string; name?: string; email?: string; phone?: string; country?: string }

export interface ConfirmInput {
  paymentMethodId: string;
  /** Where the customer's browser goes once an authentication (3-D Secure) is done. */
  returnUrl?: string;
  installments?: number;
  routing?: RoutingHintsInput;
  /** The API's seal of this confirm with its command id (`carriedSeal`, kind `confirm`): the plan refuses a confirm without a valid one. */
  seal?: string;
  context: RequestContext;
}

/**
 * The `create` update's argument (optional: a plain create, and every history recorded before it
 * existed, sends none). With `confirm`, the workflow runs the confirm walk as soon as the row is written,
 * and `create` answers when the walk ends (create and confirm in one request).
 */
export interface CreateInput { confirm?: ConfirmInput }

/** A capture or cancel, with the API's seal of it (`paymentCommand` kinds `capture`, `cancel`), checked before the processor is called. */
export interface CaptureInput { amount?: number; seal?: string; context: RequestContext }
export interface CancelInput { reason?: string; seal?: string; context: RequestContext }

/** What an update answers: the status after it, and for confirm how the walk ended (if it did). */
export interface CommandResult {
  status: PaymentStatus;
  /** `no_eligible_provider` when confirm found no candidate; `processing` when it did not end within 10 s. */
  outcome?: 'succeeded' | 'authorized' | 'failed' | 'no_eligible_provider' | 'processing' | 'captured' | 'canceled'
    /** The processor received the capture or void and tells its outcome later, by notification. */
    | 'capture_pending' | 'cancel_pending'
    /** The issuer asked for the customer's authentication: the payment waits in REQUIRES_ACTION. */
    | 'requires_action';
}

/** A capture or void the processor received and has not reported on yet (the payment stays AUTHORIZED). */
export interface PendingOperation {
  operation: 'capture' | 'void';
  chargeId: string;
  /** The amount asked for (capture). */
  amount?: number;
  /** Why the payment is being canceled (void). */
  reason?: string;
}

/** How an attempt went at the provider (activities/providers/types.ts: the adapters' outcome kinds). */
export type AttemptOutcome = 'approved' | 'hard_decline' | 'soft_decline' | 'transport_error' | 'unknown' | 'requires_action';

export interface AttemptSummary {
  chargeId: string;
  attemptNo: number;
  providerConfigId: string;
  outcome: 'pending' | AttemptOutcome;
  declineCode?: string;
}

/** The `state` query: what an operator wants to know about a payment right now. */
export interface PaymentState {
  paymentId: string;
  status: PaymentStatus;
  amount: number;
  currency: string;
  routingPlanId?: string;
  candidates: PlannedCandidate[];
  currentIndex?: number;
  attempts: AttemptSummary[];
  lastError?: { code: string; message?: string };
  authorizedAmount: number;
  capturedAmount: number;
  reconciling: boolean;
  /** A capture or void awaiting the processor's notification. */
  pendingOperation?: PendingOperation;
  /** The charge waiting for the customer's authentication, and since when (ms since the epoch). */
  authentication?: { chargeId: string; since: number };
  /**
   * The workflow stopped acting on the payment: a step (a transition, or `create`) met a write Postgres
   * refuses for good. The payment keeps the status it had; an operator takes it from here.
   */
  needsAttention?: { reason: string; step: string; since: number };
  /** SUCCEEDED by a capture the processor may still report failed: the charge listened for, and until when (ms since the epoch). */
  captureFailureWatch?: { chargeId: string; until: number };
}

/** The `authenticationReturn` update: the customer is back from authenticating (the return params are sealed on the charge). */
export interface AuthenticationReturnInput { chargeId: string }

export const paymentUpdates = {
  /**
   * Sent with the start (update-with-start): answers once the payment row is written, or, when it
   * carries a confirm, once that confirm's walk has ended (as `confirm` answers).
   */
  create: defineUpdate<CommandResult, [CreateInput?]>('create'),
  confirm: defineUpdate<CommandResult, [ConfirmInput]>('confirm'),
  capture: defineUpdate<CommandResult, [CaptureInput]>('capture'),
  cancel: defineUpdate<CommandResult, [CancelInput]>('cancel'),
  /** The customer's browser came back from authenticating: completes the step with the processor; answers when it is. */
  authenticationReturn: defineUpdate<CommandResult, [AuthenticationReturnInput]>('authenticationReturn'),
};

export const paymentSignals = {
  /** A verified processor notification about one of this payment's charges (docs/connectors.md). */
  providerEvent: defineSignal<[ProviderEventSignal]>(PROVIDER_EVENT_SIGNAL),
};

export const paymentQueries = {
  state: defineQuery<PaymentState>('state'),
};

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

export interface PlanArgs extends PaymentRef {
  routingPlanId: string;
  paymentMethodId: string;
  /** The confirm's return_url, written on the payment. */
  returnUrl?: string;
  installments?: number;
  routing?: RoutingHintsInput;
  /** The confirm's seal (ConfirmInput.seal), checked before the plan is made. */
  seal?: string;
  context: RequestContext;
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
  eventIds: string[];
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
  context: RequestContext;
}

export interface AttemptResult {
  outcome: AttemptOutcome;
  declineCode?: string;
  /** The customer authenticated (3-D Secure) on this charge: a later candidate gets the result. */
  authenticated?: boolean;
  paymentStatus: PaymentStatus;
  eventIds: string[];
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
}

/**
 * Step-up: a soft decline that means the issuer wants the cardholder authenticated, on an attempt that
 * did not ask for 3-D Secure, is retried once on the same candidate with 3-D Secure asked for — so it
 * neither fails the payment nor moves on. Read by the workflow (which retries) and by the activity that
 * records the decline (which keeps the payment PROCESSING).
 */
export function stepsUp(args: Pick<AttemptArgs, 'threeDSecure'>, result: { outcome: string; declineCode?: string }): boolean {
  return result.outcome === 'soft_decline' && result.declineCode === 'authentication_required' && !args.threeDSecure?.requested;
}

export interface ReconcileResult extends AttemptResult {
  /** The provider could not tell yet (lookup failed, or the original call may still arrive): ask again later. */
  pending: boolean;
}

/**
 * Which of the charge's captures (or voids) the workflow sends, counting from 1: the processor's
 * idempotency key is `<charge>:capture` for the first and `<charge>:capture:<n>` for each later one, so a
 * capture sent again after the processor refused one reaches it instead of its stored refusal. Retries
 * of one command keep their key. Absent in histories from before: the first key.
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
  eventIds: string[];
  /** The processor only received the capture: its notification completes it (settleOperation). */
  pending?: boolean;
  /** The processor refused it at once: recorded (`last_error`, `charge.capture_failed`), the payment still AUTHORIZED. */
  declined?: { declineCode: string; message?: string };
}

/** `command`: the cancel update's, checked; absent when the workflow's own expiry cancels. */
export interface CancelArgs extends PaymentRef, OperationSequence { chargeId?: string; reason: string; command?: SealedCommand; context: RequestContext }

export interface CancelResult extends RecordedEvents {
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
  eventIds: string[];
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
export interface CaptureFailureResult extends RecordedEvents {
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

/** The events an activity recorded, to be fanned out to webhooks (none when the account has no endpoint). */
export interface RecordedEvents { eventIds: string[] }

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
  createPaymentRecord(input: PaymentInput): Promise<RecordedEvents>;
  /** Builds and stores the routing plan, and moves the payment to PROCESSING (or FAILED). Idempotent. */
  planRoute(args: PlanArgs): Promise<PlanResult>;
  /** Both of the above in one transaction, for a create that carries a confirm; its events are those of both. Idempotent. */
  createPaymentAndPlanRoute(args: CreateAndPlanArgs): Promise<PlanResult>;
  /** The row, its plan and the plan's first attempt, for a create that carries a confirm (PaymentInput.authorizeWithRow). Idempotent. */
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

// ---------------------------------------------------------------------------------------------------
// Sealed commands (docs/security.md §16): what the API seals into a payment's start, confirm, capture
// and cancel. The API seals `paymentCommand(...)` with the vault key (purpose PAYMENT_SEAL_PURPOSE); the
// activity that moves money on it checks the seal before any processor call, so a workflow started or
// updated by anyone else who reaches Temporal moves nothing. The workflow only carries the seals: it
// has no key to check them with.

export const PAYMENT_SEAL_PURPOSE = 'payment';

/**
 * The failure type of a command refused by its activity (non-retryable): no valid seal, a command id
 * already used, or a start whose payment another run wrote. Nothing was written, nothing sent to a processor.
 */
export const UNSEALED_COMMAND = 'unsealed_command';

/** The facts of a start its seal covers: every field the payment row, its customer and its timers are made from. */
export type StartFacts = Pick<PaymentInput,
  | 'paymentId' | 'accountId' | 'workspaceId' | 'environment' | 'customerId' | 'amount' | 'currency' | 'autoCapture' | 'secureMode'
  | 'installments' | 'routing' | 'metadata' | 'checkoutSessionId' | 'authExpiryMs' | 'paymentExpiryMs' | 'authenticationTimeoutMs'
  | 'guestCustomer'>;

/**
 * A confirm and a capture each carry a one-time `commandId` (the API's, random), inside what is sealed:
 * the activity that acts on one claims it for that one use and refuses any other, so a seal copied from
 * a history into a new update (a confirm while the payment is FAILED, a capture after a refused one)
 * moves nothing.
 */
export type PaymentCommand =
  | ({ kind: 'start' } & StartFacts)
  | {
    kind: 'confirm'; paymentId: string; commandId: string; paymentMethodId: string; returnUrl?: string; installments?: number;
    routing?: RoutingHintsInput;
  }
  | { kind: 'capture'; paymentId: string; commandId: string; amount?: number }
  | { kind: 'cancel'; paymentId: string; reason?: string };

/** A start's command: the input's sealed facts, picked by one function on both sides so none is left out. */
export function startCommand(input: StartFacts): PaymentCommand {
  return {
    kind: 'start', paymentId: input.paymentId, accountId: input.accountId, workspaceId: input.workspaceId, environment: input.environment,
    customerId: input.customerId, amount: input.amount, currency: input.currency, autoCapture: input.autoCapture,
    secureMode: input.secureMode, installments: input.installments, routing: input.routing, metadata: input.metadata,
    checkoutSessionId: input.checkoutSessionId, authExpiryMs: input.authExpiryMs, paymentExpiryMs: input.paymentExpiryMs,
    authenticationTimeoutMs: input.authenticationTimeoutMs, guestCustomer: input.guestCustomer,
  };
}

/** The text a payment command's seal covers: its kind and every fact the API decided, in a fixed order. */
export function paymentCommand(command: PaymentCommand): string {
  switch (command.kind) {
    case 'start':
      return JSON.stringify([
        'start', command.paymentId, command.accountId, command.workspaceId, command.environment,
        command.customerId ?? null, command.amount, command.currency, command.autoCapture,
        command.secureMode, command.installments, routingText(command.routing), entriesText(command.metadata),
        command.checkoutSessionId ?? null, command.authExpiryMs, command.paymentExpiryMs, command.authenticationTimeoutMs ?? null,
        guestText(command.guestCustomer),
      ]);
    case 'confirm':
      return JSON.stringify([
        'confirm', command.paymentId, command.commandId, command.paymentMethodId, command.returnUrl ?? null, command.installments ?? null,
        routingText(command.routing),
      ]);
    case 'capture':
      return JSON.stringify(['capture', command.paymentId, command.commandId, command.amount ?? null]);
    case 'cancel':
      return JSON.stringify(['cancel', command.paymentId, command.reason ?? null]);
  }
}

/**
 * The seal a confirm or capture carries (ConfirmInput.seal, CaptureInput.seal): its command id, then the
 * vault's seal of the command, which covers the id. One field, so the workflow passes both on as it is.
 */
export function carriedSeal(commandId: string, seal: string): string {
  return `${commandId}/${seal}`;
}

/** A carried seal's command id and seal; the id empty when it carries none (refused: no seal covers an empty id). */
export function openCarriedSeal(carried: string | undefined): { commandId: string; seal: string | undefined } {
  const slash = carried?.indexOf('/') ?? -1;
  if (!carried || slash < 0) return { commandId: '', seal: carried };
  return { commandId: carried.slice(0, slash), seal: carried.slice(slash + 1) };
}

/** Metadata (or any string map) as sorted entries, whatever order its keys travelled in. */
function entriesText(map: Record<string, string> | undefined): unknown {
  return Object.entries(map ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function guestText(guest: GuestCustomerInput | undefined): unknown {
  return guest ? [guest.id, guest.name ?? null, guest.email ?? null, guest.phone ?? null, guest.country ?? null] : null;
}

/** Routing hints in a fixed order, whatever order their keys travelled in. */
function routingText(routing: RoutingHintsInput | undefined): unknown {
  if (!routing) return null;
  return [routing.provider_config_ids ?? null, routing.exclude_provider_config_ids ?? null, routing.max_attempts ?? null];
}
