/**
 * The payments contract's ground floor (re-exported by contracts/payments.ts, which everyone
 * imports): the statuses and the transition table, what a start and each command carry, and the sealed
 * commands. Free of Node and I/O, and of any card number, CVC or credential.
 */
import type { Environment, RequestContext } from './temporal';

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
   * REQUIRES_ACTION while the customer authenticates (the walk goes on from there). CREATED (or FAILED)
   * again when the first activity refuses the confirm's seal: nothing was tried, so the payment is as it was.
   */
  walk: { from: ['PROCESSING'], to: ['AUTHORIZED', 'SUCCEEDED', 'FAILED', 'PROCESSING', 'REQUIRES_ACTION', 'CREATED'] },
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
  /** A confirm of a payment whose walks failed MAX_FAILED_CONFIRMATIONS times: it takes no more. */
  tooManyAttempts: 'too_many_attempts',
} as const;

/**
 * How many confirmations of one payment may fail (walks that end FAILED) before it refuses more: a
 * payment id and its client_secret must not be an unlimited card-testing oracle (docs/security.md). The
 * failure that reaches it records `last_error.code` TOO_MANY_ATTEMPTS (db/payment-rows.ts counts them in
 * `failed_confirmations`; the payment machine counts them too, for its confirm validator).
 */
export const MAX_FAILED_CONFIRMATIONS = 5;

/** The `last_error.code` of the failed confirmation that reaches MAX_FAILED_CONFIRMATIONS. */
export const TOO_MANY_ATTEMPTS = 'too_many_attempts';

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
  checkoutSessionId?: string;
  /** The invoice this payment pays, and its subscription (whose workflow the payment tells its outcome). */
  invoice?: InvoiceOfPayment;
  /**
   * The card is charged as a stored credential (docs/billing.md#stored-credentials): `customer` for the
   * first payment of a subscription (the customer present, 3-D Secure possible), `merchant` for a renewal
   * made off-session, which carries the network transaction id of an earlier approval of the card.
   */
  recurring?: RecurringUse;
  metadata: Record<string, string>;
  routing: RoutingHintsInput;
  /** Durations in milliseconds (AUTH_EXPIRY, PAYMENT_EXPIRY). */
  authExpiryMs: number;
  paymentExpiryMs: number;
  /** AUTHENTICATION_TIMEOUT in milliseconds. */
  authenticationTimeoutMs: number;
  /**
   * The API's seal of what the start decided (`paymentCommand` kind `start`): the first
   * activity refuses a start without a valid one, so a workflow started by anyone else moves nothing.
   */
  seal?: string;
  context: RequestContext;
}

export interface InvoiceOfPayment { invoiceId: string; subscriptionId: string }

/** How a stored card is used: who starts the transaction, under which agreement (only subscriptions today). */
export interface RecurringUse { model: 'subscription'; initiator: 'customer' | 'merchant' }

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
 * The `create` update's argument (optional: a plain create sends none). With `confirm`, the workflow
 * runs the confirm walk as soon as the row is written, and `create` answers when the walk ends (create
 * and confirm in one request).
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
  | 'invoice' | 'recurring'>;

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
    authenticationTimeoutMs: input.authenticationTimeoutMs, invoice: input.invoice, recurring: input.recurring,
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
        command.checkoutSessionId ?? null, command.authExpiryMs, command.paymentExpiryMs, command.authenticationTimeoutMs,
        command.invoice ? [command.invoice.invoiceId, command.invoice.subscriptionId] : null,
        command.recurring ? [command.recurring.model, command.recurring.initiator] : null,
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

/** Routing hints in a fixed order, whatever order their keys travelled in. */
function routingText(routing: RoutingHintsInput | undefined): unknown {
  if (!routing) return null;
  return [routing.provider_config_ids ?? null, routing.exclude_provider_config_ids ?? null, routing.max_attempts ?? null];
}
