import type { Knex } from 'knex';
import { MAX_FAILED_CONFIRMATIONS, TOO_MANY_ATTEMPTS, type PaymentInput, type PaymentStatus, type RoutingHintsInput } from '../contracts/payments';
import { envTable, type Environment } from './environments';
import { TIMESTAMPS_AS_ISO, type AsAnswered } from './knex';

/**
 * The rows of the payments store (db/payments.ts) and of the outcomes written to it
 * (db/payment-outcomes.ts): their types, their patches, and how a patch goes into its columns.
 */

/** Why the last confirm failed, as the API shows it (`last_error`). */
export interface PaymentLastError {
  code: string;
  decline_code?: string | null;
  charge_id?: string;
  message?: string | null;
}

/** The step the customer must take before the processor decides (`next_action`, as the API shows it). */
export interface NextAction {
  type: 'redirect_to_url';
  redirect_to_url: { url: string; return_url: string | null };
  /** When the payment started waiting (shown to operators; not part of the checkout view). */
  since: string;
  charge_id: string;
}

/** A capture or void awaiting the processor's notification, as the API shows it (`pending_operation`). */
export interface PendingOperationRecord {
  type: 'capture' | 'void';
  charge_id: string;
  amount: number | null;
  requested_at: string;
}

export interface PaymentRow {
  id: string;
  account_id: string;
  customer_id: string | null;
  checkout_session_id: string | null;
  payment_method_id: string | null;
  amount: number;
  currency: string;
  status: PaymentStatus;
  auto_capture: boolean;
  secure_mode: PaymentInput['secureMode'];
  installments: number;
  routing_origin: string;
  routing: RoutingHintsInput;
  amount_capturable: number;
  amount_received: number;
  amount_refunded: number;
  cancellation_reason: string | null;
  last_error: PaymentLastError | null;
  /** A capture or void the processor received and has not reported on yet. */
  pending_operation: PendingOperationRecord | null;
  next_action: NextAction | null;
  /** Where the customer's browser goes after authenticating (given at confirm). */
  return_url: string | null;
  metadata: Record<string, string>;
  created_at: Date;
  updated_at: Date;
  /** Why its workflow stopped acting on the payment (a write Postgres refuses for good), and since when; null while it acts. */
  needs_attention_reason: string | null;
  needs_attention_at: Date | null;
  /** 0 when inserted, one more with every update (a trigger sets it: no writer can forget it). */
  version: number;
  /** The workflow run that wrote the row (docs/security.md §16): a later run of the same payment writes nothing. */
  workflow_run_id: string | null;
  /** Confirmations whose walk ended FAILED (at MAX_FAILED_CONFIRMATIONS the payment takes no more). */
  failed_confirmations: number;
}

/**
 * A payment's row as the API reads it, with the `client_secret` Postgres drew for it (migration 020). The
 * rows activities write and events show are PaymentRow's, without it: it has no business there.
 */
export type WithClientSecret<R> = R & { client_secret: string };

export type ChargeStatus =
  | 'CREATED' | 'REQUIRES_ACTION' | 'AUTHORIZED' | 'CAPTURED' | 'DECLINED' | 'FAILED' | 'UNKNOWN' | 'VOIDED' | 'PARTIALLY_REFUNDED'
  | 'REFUNDED';

/** Milliseconds the attempt took, and how many provider calls it made. */
export interface ChargePerformance { duration?: number; provider_calls?: number; [key: string]: unknown }

/** Since when, and why, a charge's outcome is unknown (reconciled until the provider tells). */
export interface ChargeDetails { unknown_since?: string; unknown_reason?: string; [key: string]: unknown }

export interface ChargeRow {
  id: string;
  payment_id: string;
  payment_method_id: string | null;
  customer_id: string | null;
  account_id: string;
  status: ChargeStatus;
  amount: number;
  authorized_amount: number;
  captured_amount: number;
  refunded_amount: number;
  pending_refund_amount: number;
  currency: string;
  installments: number;
  attempt_no: number;
  security: Record<string, unknown>;
  transaction: Record<string, unknown>;
  details: ChargeDetails;
  metadata: Record<string, unknown>;
  /** What was sent to and answered by the provider, one entry per call (never credentials or card data). */
  exchanges: unknown[];
  performance: ChargePerformance;
  routing_plan_id: string | null;
  payment_provider_id: string | null;
  payment_provider_config_id: string | null;
  payment_provider_method_id: string | null;
  routing_origin: string;
  payment_provider_config_snapshot: Record<string, unknown>;
  decline_code: string | null;
  provider_reference: string | null;
  /** The 3-D Secure result of a successful authentication, sealed (never read by the API). */
  authentication_sealed: string | null;
  /** The processor's return parameters of the customer's return, sealed. */
  return_params_sealed: string | null;
  created_at: Date;
  updated_at: Date;
}

/** A payment as read for an answer (GET, the list): its timestamps already the API's text (TIMESTAMPS_AS_ISO). */
export type AnsweredPayment = AsAnswered<PaymentRow>;

/**
 * The columns no answer about a payment shows (serializePayment): the client_secret, which only the one
 * payment's read answers, the return URL and the workflow's bookkeeping. A list and a webhook's payload
 * read every other column (SHOWN_PAYMENT_COLUMNS, db/payments.ts) and not these.
 */
export const UNSHOWN_PAYMENT_COLUMNS = ['client_secret', 'return_url', 'version', 'workflow_run_id', 'failed_confirmations'] as const;

type UnshownColumn = typeof UNSHOWN_PAYMENT_COLUMNS[number];
/** A payment read with the columns its answer shows, or any fuller row. */
export type ShownPayment = Omit<PaymentRow, UnshownColumn> | Omit<AnsweredPayment, UnshownColumn>;
/** A payment read with the columns its answer shows, its timestamps the API's text (a list's row, a payload's payment). */
export type ListedPayment = Omit<AnsweredPayment, UnshownColumn>;
/** What one charge's disputes add up to (db/disputes.ts): its chargebacks' amount (inquiries claim nothing). */
export interface ChargeDisputes { payment_id: string; charge_id: string; amount: number }
/** A charge as read for an answer (a payment's `charges`): its timestamps already the API's text. */
export type AnsweredCharge = AsAnswered<ChargeRow>;
/**
 * A payment read for an answer to the merchant or a checkout: with its client_secret, and its charges'
 * disputes, read in the same statement (readPayment) so that an answer needs no second query; with its
 * charges too when the answer shows them.
 */
export type ReadPayment = WithClientSecret<AnsweredPayment> & { disputes?: ChargeDisputes[]; charges?: AnsweredCharge[] };

/**
 * The name of a new payment's insert (paymentInsert) in the statement that writes it: what goes in only
 * with the row (its plan, first charge, command claim, events) waits on this CTE.
 */
export const PAYMENT_WRITTEN = 'payment_written';

// jsonb columns are written as JSON text; reads come back parsed (the row types above).
export const json = (value: unknown) => JSON.stringify(value);
export const payments = (db: Knex, env: Environment) => db<PaymentRow>(envTable(env, 'payments'));
export const charges = (db: Knex, env: Environment) => db<ChargeRow>(envTable(env, 'charges'));
/** Reads whose rows go straight into an answer (TIMESTAMPS_AS_ISO). */
export const answeredPayments = (db: Knex, env: Environment) => db<AnsweredPayment>(envTable(env, 'payments')).options(TIMESTAMPS_AS_ISO);
export const answeredCharges = (db: Knex, env: Environment) => db<AnsweredCharge>(envTable(env, 'charges')).options(TIMESTAMPS_AS_ISO);
/** Untyped builders for writes: jsonb columns take JSON text and `exchanges` a raw append. */
export const paymentsTable = (db: Knex, env: Environment) => db(envTable(env, 'payments'));
export const chargesTable = (db: Knex, env: Environment) => db(envTable(env, 'charges'));

export interface PaymentPatch {
  status?: PaymentStatus;
  payment_method_id?: string;
  installments?: number;
  amount_capturable?: number;
  amount_received?: number;
  cancellation_reason?: string;
  last_error?: PaymentLastError | null;
  pending_operation?: PendingOperationRecord | null;
  next_action?: NextAction | null;
  return_url?: string | null;
  /**
   * This write ends a confirm's walk FAILED: `failed_confirmations` counts one more, and the one that
   * reaches MAX_FAILED_CONFIRMATIONS records TOO_MANY_ATTEMPTS as its `last_error.code` (the issuer's
   * `decline_code` kept). Counted by the statement itself, from the row as it finds it.
   */
  failedConfirmation?: true;
}

/** The `last_error` of the failed confirmation that reaches the cap: what it says, its code too_many_attempts. */
const CAPPED_ERROR = { code: TOO_MANY_ATTEMPTS, message: 'The payment has failed too many confirmations and takes no more.' };

/** A patch as its columns take it: the jsonb ones as JSON text, a failed confirmation counted in SQL. */
export function encoded(db: Knex, patch: PaymentPatch): Record<string, unknown> {
  const { last_error: lastError, pending_operation: pending, next_action: nextAction, failedConfirmation, ...rest } = patch;
  const errorText = lastError === undefined ? undefined : lastError === null ? null : json(lastError);
  return {
    ...rest,
    ...(errorText !== undefined ? { last_error: errorText } : {}),
    ...(pending !== undefined ? { pending_operation: pending === null ? null : json(pending) } : {}),
    ...(nextAction !== undefined ? { next_action: nextAction === null ? null : json(nextAction) } : {}),
    ...(failedConfirmation ? {
      failed_confirmations: db.raw('failed_confirmations + 1'),
      // The right-hand sides read the row as it was before this update.
      last_error: db.raw('case when failed_confirmations + 1 >= ? then coalesce(?::jsonb, last_error, \'{}\') || ?::jsonb else coalesce(?::jsonb, last_error) end', [
        MAX_FAILED_CONFIRMATIONS, errorText ?? null, json(CAPPED_ERROR), errorText ?? null,
      ]),
    } : {}),
  };
}

/** `payment` (as it was) as a patch with `failedConfirmation` leaves its count and `last_error`: encoded's SQL, in JS. */
export function withFailedConfirmation<R extends Pick<PaymentRow, 'failed_confirmations' | 'last_error'>>(payment: R, patch: PaymentPatch): R {
  if (!patch.failedConfirmation) return payment;
  const count = payment.failed_confirmations + 1;
  const lastError = patch.last_error !== undefined ? patch.last_error : payment.last_error;
  return { ...payment, failed_confirmations: count, last_error: count >= MAX_FAILED_CONFIRMATIONS ? { ...(lastError ?? {}), ...CAPPED_ERROR } : lastError };
}

export interface ChargePatch {
  status?: ChargeStatus;
  authorized_amount?: number;
  captured_amount?: number;
  provider_reference?: string;
  decline_code?: string | null;
  authentication_sealed?: string | null;
  return_params_sealed?: string | null;
  details?: ChargeDetails;
  performance?: ChargePerformance;
  /** Appended to the charge's exchanges. */
  exchanges?: unknown[];
}

/** A charge as an attempt knows it without reading it: every column but its timestamps, which are Postgres's. */
export type ChargeState = Omit<ChargeRow, 'created_at' | 'updated_at'>;

/** A charge patch as its columns take it: jsonb as JSON text, `exchanges` appended. */
export function chargeSet(db: Knex, patch: ChargePatch, at: Date): Record<string, unknown> {
  const { exchanges, details, performance, ...rest } = patch;
  return {
    ...rest,
    ...(details ? { details: json(details) } : {}),
    ...(performance ? { performance: json(performance) } : {}),
    ...(exchanges ? { exchanges: db.raw('exchanges || ?::jsonb', [json(exchanges)]) } : {}),
    updated_at: at,
  };
}

/** `charge` as its update with `patch` at `at` leaves it (`exchanges` appended). */
export function chargeAfter(charge: ChargeRow, patch: ChargePatch, at: Date): ChargeRow {
  const { exchanges, ...rest } = patch;
  return { ...charge, ...rest, exchanges: exchanges ? [...charge.exchanges, ...exchanges] : charge.exchanges, updated_at: at };
}

/** `payment` as its update with `patch` at `at` leaves it (its version one more, as the trigger sets it). */
export function paymentAfter(payment: PaymentRow, patch: PaymentPatch, at: Date): PaymentRow {
  const { failedConfirmation: _, ...columns } = patch;
  return withFailedConfirmation({ ...payment, ...columns, updated_at: at, version: payment.version + 1 }, patch);
}

/** What an outcome's one statement holds a payment's row to: as its attempt read or wrote it. */
export type PaymentGuard = Pick<PaymentRow, 'id' | 'version'>;
