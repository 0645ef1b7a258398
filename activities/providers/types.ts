// The provider-adapter contract (Medusa-style: one input and one output type per operation).
// Adapters run inside activities only. Inputs carry the card and credentials an activity loaded just in
// time; outputs never do, because they flow into workflow history and the charge's `exchanges`.

import type { ProviderCatalogueEntry } from '../../lib/providers/types';

/** Raw card data. Lives only inside an activity, between the vault and the adapter. */
export interface CardData {
  number: string;
  exp_month: number;
  exp_year: number;
  cvc?: string;
  holder_name?: string;
}

// Credentials, 3-D Secure results and inbound notifications are pure (the API parses webhooks too), so
// they live in lib/providers/notification-types.ts; re-exported here so adapters import one module.
export type { ExternalAuthentication, NotifiedOperation, ProcessorEvent, ProviderCredentials, WebhookRequest, WebhookVerdict } from '../../lib/providers/notification-types';
import type { ExternalAuthentication, ProviderCredentials } from '../../lib/providers/notification-types';

// Outcomes: what an operation's answer means, their own module (re-exported: one home, the same imports).
export type { Approved, HardDecline, OutcomeKind, PendingOutcome, ProviderOutcome, RequiresAction, SoftDecline, TransportError, UnknownOutcome } from '../../lib/providers/outcomes';
import type { OutcomeKind, ProviderOutcome } from '../../lib/providers/outcomes';
import type { DisputeEvidence, DisputeReason } from '../../lib/providers/disputes';

export type ProviderOperation = 'authorize' | 'capture' | 'void' | 'refund' | 'get_status' | 'authenticate' | 'reverse' | 'dispute_submit' | 'dispute_accept';

/**
 * One request/response with the provider, as recorded in the charge's `exchanges` array. Snake_case
 * because it is stored and shown as is. Never holds a card number, CVC or credential.
 */
export interface ProviderExchange {
  operation: ProviderOperation;
  idempotency_key: string;
  request: { method: string; path: string; body?: Record<string, unknown> };
  /** Absent when no answer came back. */
  response?: { status: number; body?: unknown };
  /** For get_status, `not_found` when the provider has no operation under the key. */
  outcome: OutcomeKind | 'not_found';
  decline_code?: string;
  /** The provider's own code behind `decline_code`, when it has one (e.g. Stripe's `decline_code`). */
  provider_code?: string;
  error?: string;
  started_at: string;
  duration_ms: number;
}

// ---------------------------------------------------------------------------------------------------
// Operations

interface OperationInput {
  credentials: ProviderCredentials;
  /** The provider never performs the same operation twice for one key (the charge id, refund id, …). */
  idempotencyKey: string;
}

export interface ThreeDSecureRequest {
  /** Ask the issuer for a challenge (the step-up after an `authentication_required` soft decline). */
  requested?: boolean;
  /** A previous successful authentication of this payment's card, where the processor accepts external data. */
  external?: ExternalAuthentication;
}

/**
 * A stored-credential transaction (docs/billing.md#stored-credentials): `customer` — the customer is present
 * and the card is (or stays) set up for later off-session use; `merchant` — off-session, no CVC, the
 * customer absent, referencing the network transaction id of an earlier approval of the card when known.
 */
export interface RecurringAuthorization {
  model: 'subscription';
  initiator: 'customer' | 'merchant';
  networkTransactionId?: string;
}

export interface AuthorizeInput extends OperationInput {
  amount: number;
  currency: string;
  installments: number;
  card: CardData;
  metadata?: Record<string, string>;
  /**
   * Where the processor sends the customer back after authenticating: our return endpoint for this
   * charge. Absent (direct adapter use): the adapter's placeholder, for processors that require one.
   */
  returnUrl?: string;
  /** Where a processor that is told per request (the sandbox) posts its notifications: the config's webhook_url. */
  notificationUrl?: string;
  threeDSecure?: ThreeDSecureRequest;
  /**
   * The payment captures at once. An adapter whose provider can authorize and capture in one call may
   * do so (its Approved then has capturedAmount = authorizedAmount, and no separate capture follows);
   * others ignore it and the capture follows under `<charge id>:capture`.
   */
  capture?: boolean;
  /** The card is used as a stored credential (absent: a plain payment, no flags sent). */
  recurring?: RecurringAuthorization;
}

export interface CaptureInput extends OperationInput {
  providerReference: string;
  /** Defaults to the whole authorized amount (processors that need an amount are given it: Adyen). */
  amount?: number;
  /** The payment's currency (ISO 4217): some processors want it with every amount. */
  currency: string;
}

export interface VoidInput extends OperationInput {
  providerReference: string;
}

/** Cancel or refund, whichever the charge's state at the processor needs: the whole amount is released. */
export interface ReverseInput extends OperationInput {
  providerReference: string;
}

export interface RefundInput extends OperationInput {
  providerReference: string;
  amount: number;
  /** The payment's currency (ISO 4217). */
  currency: string;
}

export interface GetStatusInput {
  credentials: ProviderCredentials;
  /** The key of the operation to look up (e.g. the charge id an authorize was sent with). */
  idempotencyKey: string;
  /** The provider's id of the charge, when known (a refund's look-up): some providers find refunds under it. */
  providerReference?: string;
}

export interface OperationOutput {
  outcome: ProviderOutcome;
  exchange: ProviderExchange;
}

export interface CompleteAuthenticationInput {
  credentials: ProviderCredentials;
  /** `<charge id>:authenticate`. */
  idempotencyKey: string;
  /** Our reference for the charge, as the authorize sent it (the charge id). */
  reference: string;
  /** The charge's reference at the processor (from the requires_action answer). */
  providerReference: string;
  /** The query parameters the processor appended to our return URL (Adyen's `redirectResult`, …). */
  returnParams: Record<string, string>;
  /** The authorized amount (a processor whose completion answer carries none: Adyen). */
  amount?: number;
  /** The authorize asked to capture at once. */
  capture?: boolean;
  /** The challenge page the authorize answered with, for a `requires_action` answer that does not repeat it. */
  redirectUrl?: string;
}

/**
 * How the authentication ended, as the authorization's outcome: approved (captured when the authorize
 * asked for it), `authentication_failed` (hard: no other provider is tried), another decline, `unknown`,
 * or still `requires_action` (the customer has not finished). `authentication` is the 3-D Secure result
 * when the customer authenticated, for a later candidate (never stored in history).
 */
export interface CompleteAuthenticationOutput extends OperationOutput {
  authentication?: ExternalAuthentication;
}

export type AuthorizeOutput = OperationOutput;
export type CaptureOutput = OperationOutput;
export type VoidOutput = OperationOutput;
export type RefundOutput = OperationOutput;
export type ReverseOutput = OperationOutput;

/**
 * `not_found`: the provider has no operation under this key. Conclusive only once the original call can
 * no longer arrive (its client timeout has passed); then the operation may be treated as never made.
 * `failed`: the lookup itself got no answer; ask again later.
 */
export type GetStatusOutput =
  | { lookup: 'found'; operation: Exclude<ProviderOperation, 'get_status'>; outcome: ProviderOutcome; exchange: ProviderExchange }
  | { lookup: 'not_found'; exchange: ProviderExchange }
  | { lookup: 'failed'; error: string; exchange: ProviderExchange };

// ---------------------------------------------------------------------------------------------------
// The adapter: what it offers (its catalogue entry, lib/providers/catalogue.ts) and its operations

// ---------------------------------------------------------------------------------------------------
// Disputes (docs/disputes.md): answering a processor's chargeback

export interface DisputeActionInput {
  credentials: ProviderCredentials;
  /** The processor's id of the dispute (DisputeNotice.processorDisputeId). */
  processorDisputeId: string;
  /** `<dp id>:submit` or `<dp id>:accept`: the processor does the action once. */
  idempotencyKey: string;
}

export interface SubmitDisputeEvidenceInput extends DisputeActionInput {
  evidence: DisputeEvidence;
  /** Our reason for the dispute, for processors that want a defense reason chosen by it (Adyen). */
  reason: DisputeReason;
}

/**
 * How the processor took the answer: `done` (it has it: the dispute is under review, or lost when
 * accepted), `refused` (for good: past its deadline, already answered, not defendable), or `failed` (no
 * answer: ask again). Its exchange is recorded on the dispute.
 */
export type DisputeActionOutput =
  | { result: 'done'; exchange: ProviderExchange }
  | { result: 'refused'; reason: string; exchange: ProviderExchange }
  | { result: 'failed'; error: string; exchange: ProviderExchange };

export interface ProviderAdapter extends Omit<ProviderCatalogueEntry, 'displayName'> {
  authorize(input: AuthorizeInput): Promise<AuthorizeOutput>;
  capture(input: CaptureInput): Promise<CaptureOutput>;
  void(input: VoidInput): Promise<VoidOutput>;
  refund(input: RefundInput): Promise<RefundOutput>;
  getStatus(input: GetStatusInput): Promise<GetStatusOutput>;
  /** Sends a dispute's evidence and asks the processor to decide (Stripe's update with `submit`, Adyen's supply + defend). */
  submitDisputeEvidence(input: SubmitDisputeEvidenceInput): Promise<DisputeActionOutput>;
  /** Concedes a dispute (Stripe's close, Adyen's acceptDispute): the merchant does not contest it. */
  acceptDispute(input: DisputeActionInput): Promise<DisputeActionOutput>;
  /**
   * How long after an unknown outcome a `not_found` look-up becomes conclusive, when longer than twice
   * the call's timeout (a provider whose look-up lags behind its writes, e.g. Stripe's search index).
   */
  notFoundSettleMs?: number;
  /**
   * Asked to capture at once, the processor captures the authorization by itself (Adyen's
   * `captureDelayHours: 0`): an approval that arrives by notification is then a captured one.
   */
  capturesWithAuthorization?: boolean;
  /**
   * The processor may report a refund failed after it reported it succeeded (Stripe's `refund.failed` for
   * a `succeeded` refund, Adyen's REFUNDED_REVERSED): for this long after it succeeded, the refund's
   * workflow listens for that notification and reverses the refund. Absent: a succeeded refund is final.
   */
  refundReversalWindowMs?: number;
  /**
   * The processor may report a capture made with the authorization failed after it reported it done (Adyen's
   * CAPTURE_FAILED: the card scheme rejected it): for this long after such a payment succeeded, its workflow
   * listens for that notification and takes the payment back to AUTHORIZED. Absent: the answer is final.
   */
  captureFailureWindowMs?: number;
  /**
   * Cancels the charge when it is only authorized, refunds it when it was captured (Adyen's reversals):
   * for a charge given up while the customer authenticated, which the processor may still report
   * authorized afterwards — its look-up cannot tell without the customer's return, and its void is only
   * received. Absent: the abandon's look-up and void are conclusive (Stripe, the sandbox).
   */
  reverse?(input: ReverseInput): Promise<ReverseOutput>;
  /**
   * With `reverse`: how long after a charge was given up its payment's workflow, once the payment is
   * final, still listens for the processor reporting that charge authorized (to reverse it).
   */
  lateAuthorizationWindowMs?: number;
  /** Finishes an authorization that answered `requires_action`, once the customer is back. */
  completeAuthentication(input: CompleteAuthenticationInput): Promise<CompleteAuthenticationOutput>;
}
