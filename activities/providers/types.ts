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

/** A provider config's credentials, already validated against the adapter's credentials schema. */
export type ProviderCredentials = Record<string, unknown>;

// Outcomes: what an operation's answer means, their own module (re-exported: one home, the same imports).
export type { Approved, HardDecline, OutcomeKind, PendingOutcome, ProviderOutcome, RequiresAction, SoftDecline, TransportError, UnknownOutcome } from './outcome-types';
import type { Approved, HardDecline, OutcomeKind, ProviderOutcome, SoftDecline } from './outcome-types';

export type ProviderOperation = 'authorize' | 'capture' | 'void' | 'refund' | 'get_status' | 'authenticate' | 'reverse';

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

/**
 * A successful 3-D Secure authentication, passed to another processor so the customer is not challenged
 * twice. Sensitive (the CAVV is a one-time cryptogram): sealed on the charge row, never in workflow
 * history, logs or exchanges.
 */
export interface ExternalAuthentication {
  /** 3-D Secure protocol version, e.g. `2.2.0`. */
  version: string;
  /** Electronic commerce indicator, e.g. `05` (Visa) / `02` (Mastercard). */
  eci: string;
  /** The authentication value (CAVV / AAV), base64. */
  cavv: string;
  /** The directory server's transaction id. */
  dsTransactionId: string;
}

export interface ThreeDSecureRequest {
  /** Ask the issuer for a challenge (the step-up after an `authentication_required` soft decline). */
  requested?: boolean;
  /** A previous successful authentication of this payment's card, where the processor accepts external data. */
  external?: ExternalAuthentication;
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
// Inbound: the processor's webhooks (POST /v1/provider-webhooks/{provider_config_id})

/** One webhook request as it arrived: the exact bytes (signatures cover them) and the headers, lower-cased. */
export interface WebhookRequest {
  rawBody: string;
  headers: Record<string, string | undefined>;
  credentials: ProviderCredentials;
}

/** An operation Switchboard asks processors for, as a notification reports on it. */
export type NotifiedOperation = 'authorize' | 'capture' | 'void' | 'refund';

/**
 * One verified event from the processor, normalized. Holds no card data or secret: it is stored,
 * signalled into workflows (so it enters their history) and shown to operators.
 */
export interface ProcessorEvent {
  /**
   * The processor's own id of the event, the dedup key: Stripe's `evt_…`; for Adyen, which has no event
   * id, `<eventCode>:<pspReference>:<success>` (what Adyen sends again when it retries).
   */
  eventId: string;
  /** The processor's type: `payment_intent.succeeded`, `AUTHORISATION`, `CAPTURE`, … */
  type: string;
  /** What it reports on, when it is one of our operations (absent: stored and acknowledged only). */
  operation?: NotifiedOperation;
  /** Our id the processor echoes (Stripe metadata, Adyen merchantReference): the charge for authorize/capture/void… */
  chargeId?: string;
  /** …and the refund for refund. */
  refundId?: string;
  /** The processor's id of the payment (Stripe's pi_…, Adyen's authorization pspReference), to find the charge by. */
  providerReference?: string;
  /**
   * The operation's outcome: approved (with amounts, refundReference for refunds) or a hard/soft
   * decline in our codes. Never `pending`/`unknown`: a notification is the final word.
   */
  outcome?: Approved | HardDecline | SoftDecline;
  /** The processor's own code behind a decline (Adyen's refusalReasonCode / reason, Stripe's decline_code). */
  providerCode?: string;
  /**
   * For an authorization after a challenge: the 3-D Secure result, when the processor's event carries it.
   * Sealed on the charge by the API; never signalled.
   */
  authentication?: ExternalAuthentication;
  /** The processor says the event is of its live mode (Stripe's signed `livemode`); absent: a test-mode event, or it does not say. */
  live?: boolean;
  /** The event as received, card data and secrets left out: what is stored. */
  payload: Record<string, unknown>;
}

export type WebhookVerdict =
  | {
      verified: true;
      events: ProcessorEvent[];
      /** Items of a batch skipped for a bad signature (Adyen; logged, the others applied). */
      rejected: number;
      /** What the processor expects back (Adyen: `[accepted]`). */
      reply: { status: number; body: string; contentType: string };
    }
  /** Nothing verified: answered 401 and nothing changes. */
  | { verified: false; error: string };

// ---------------------------------------------------------------------------------------------------
// The adapter: what it offers (its catalogue entry, lib/providers/catalogue.ts) and its operations

export interface ProviderAdapter extends Omit<ProviderCatalogueEntry, 'displayName'> {
  authorize(input: AuthorizeInput): Promise<AuthorizeOutput>;
  capture(input: CaptureInput): Promise<CaptureOutput>;
  void(input: VoidInput): Promise<VoidOutput>;
  refund(input: RefundInput): Promise<RefundOutput>;
  getStatus(input: GetStatusInput): Promise<GetStatusOutput>;
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
  /**
   * Verifies a webhook request with the config's credentials and normalizes its events. Pure (no I/O):
   * the API stores what it returns and signals the workflows. Absent: the provider sends no webhooks.
   */
  parseWebhook?(request: WebhookRequest): WebhookVerdict;
}
