import { keysetPage, type Cursor, type KeysetPage, type ListStart } from './page';
import type { Knex } from 'knex';
import type { PaymentInput, PaymentStatus, RoutingHintsInput } from '../workflows/payments/contract';
import { envTable, type Environment } from './environments';
import { isoFromJsonTimestamp } from '../lib/timestamps';
import { insertWithFirst, onlyWithFirst, runPrepared, TIMESTAMPS_AS_ISO, withAlongside, type Alongside, type AsAnswered, type PreparedStatement } from './knex';

/**
 * The payments store: each environment's `payments` and `charges` tables (docs/payments.md), the only
 * module that queries them — except the refund columns (`amount_refunded`, `refunded_amount`,
 * `pending_refund_amount`), which db/refunds.ts moves together with the refund rows it reserves.
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
}

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
/** A charge as read for an answer (a payment's `charges`): its timestamps already the API's text. */
export type AnsweredCharge = AsAnswered<ChargeRow>;

// jsonb columns are written as JSON text; reads come back parsed (the row types above).
const json = (value: unknown) => JSON.stringify(value);
const payments = (db: Knex, env: Environment) => db<PaymentRow>(envTable(env, 'payments'));
const charges = (db: Knex, env: Environment) => db<ChargeRow>(envTable(env, 'charges'));
/** Reads whose rows go straight into an answer (TIMESTAMPS_AS_ISO). */
const answeredPayments = (db: Knex, env: Environment) => db<AnsweredPayment>(envTable(env, 'payments')).options(TIMESTAMPS_AS_ISO);
const answeredCharges = (db: Knex, env: Environment) => db<AnsweredCharge>(envTable(env, 'charges')).options(TIMESTAMPS_AS_ISO);
/** Untyped builders for writes: jsonb columns take JSON text and `exchanges` a raw append. */
const paymentsTable = (db: Knex, env: Environment) => db(envTable(env, 'payments'));
const chargesTable = (db: Knex, env: Environment) => db(envTable(env, 'charges'));

// ---------------------------------------------------------------------------------------------------
// Payments

export async function findPayment(db: Knex, env: Environment, id: string): Promise<PaymentRow | undefined> {
  return payments(db, env).where({ id }).first();
}

/** Every column of a payment row, in the table's order (test/api/payment-read.test.ts holds it to the table). */
export const PAYMENT_COLUMNS = [
  'id', 'account_id', 'customer_id', 'checkout_session_id', 'payment_method_id', 'amount', 'currency', 'status', 'auto_capture',
  'secure_mode', 'installments', 'routing_origin', 'routing', 'amount_capturable', 'amount_received', 'amount_refunded',
  'cancellation_reason', 'last_error', 'metadata', 'created_at', 'updated_at', 'pending_operation', 'next_action', 'return_url',
  'needs_attention_reason', 'needs_attention_at', 'version', 'workflow_run_id',
] as const satisfies readonly (keyof PaymentRow)[];

/** The API's most frequent statement (every GET of a payment, every command's answer), prepared per environment. */
const READ_PAYMENT: Record<Environment, PreparedStatement> = {
  production: readPaymentStatement('production'),
  sandbox: readPaymentStatement('sandbox'),
};

/**
 * The row as one JSON value (`row_to_json` of its named columns), not 24 columns: pg builds a result's
 * field table and a parser per column on every execution (its RowDescription comes with each), which
 * cost more of the API's CPU per read than parsing the row itself; one JSON column is one field and one
 * JSON.parse, whose objects are also cheaper to read from (docs/performance.md#the-read-path).
 */
function readPaymentStatement(env: Environment): PreparedStatement {
  return {
    name: `read_payment_json_${env}`,
    text: `select row_to_json(p) as payment from (select ${PAYMENT_COLUMNS.map((column) => `"${column}"`).join(', ')} from ${envTable(env, 'payments')} where "id" = $1) p`,
  };
}

/** A payment to answer with (GET, a command's answer): findPayment's row, its timestamps as text. */
export async function readPayment(db: Knex, env: Environment, id: string): Promise<AnsweredPayment | undefined> {
  const [row] = await runPrepared<{ payment: AnsweredPayment }>(db, READ_PAYMENT[env], [id]);
  if (!row) return undefined;
  const { payment } = row;
  // JSON's timestamps are ISO-8601 with the session's offset: the API's form is UTC with milliseconds.
  payment.created_at = isoFromJsonTimestamp(payment.created_at);
  payment.updated_at = isoFromJsonTimestamp(payment.updated_at);
  return payment;
}

/** A payment's row by id, as a select to run inside another store's statement (`where not exists`). */
export function paymentById(db: Knex, env: Environment, id: string): Knex.QueryBuilder {
  return payments(db, env).where({ id }).select('id');
}

/** Some payments by id, in one query (routing plans embed theirs). */
export async function findPayments(db: Knex, env: Environment, ids: string[]): Promise<PaymentRow[]> {
  return ids.length ? payments(db, env).whereIn('id', ids) : [];
}

export type NewPayment = Pick<PaymentRow,
  'id' | 'account_id' | 'customer_id' | 'checkout_session_id' | 'amount' | 'currency' | 'auto_capture' | 'secure_mode'
  | 'installments' | 'routing' | 'metadata'> & Partial<Pick<PaymentRow, 'workflow_run_id'>>;

/**
 * A new payment's row as its insert writes it: CREATED, or as `confirmed` leaves it (a create that carries
 * a confirm writes its row once, as the plan leaves it), the table's defaults filled in and both
 * timestamps `at` (the columns keep milliseconds, as a Date does). Known before it is written, so the
 * events that show it go in with it (test/payments/create-and-confirm.test.ts holds it to the row Postgres
 * returns).
 */
export function newPaymentRow(payment: NewPayment, confirmed: PaymentPatch, at: Date): PaymentRow {
  return {
    ...payment,
    payment_method_id: null, status: 'CREATED', routing_origin: 'MERCHANT_DIRECT',
    amount_capturable: 0, amount_received: 0, amount_refunded: 0, cancellation_reason: null, last_error: null,
    pending_operation: null, next_action: null, return_url: null, needs_attention_reason: null, needs_attention_at: null,
    workflow_run_id: payment.workflow_run_id ?? null,
    ...confirmed,
    created_at: at, updated_at: at, version: 0,
  };
}

/**
 * The insert of `row` (newPaymentRow's), unrun, for the events store to run with the events that show it
 * (`appendEventsOfWrite`, db/events.ts): it returns the row's id when it wrote the row and nothing when
 * the payment exists (the activity that writes it is retried), and then the events are not written either.
 */
export function paymentInsert(db: Knex, env: Environment, row: PaymentRow): Knex.QueryBuilder {
  const { routing, metadata, last_error: lastError, pending_operation: pending, next_action: nextAction, ...rest } = row;
  return paymentsTable(db, env)
    .insert({ ...rest, ...encoded({ last_error: lastError, pending_operation: pending, next_action: nextAction }), routing: json(routing), metadata: json(metadata) })
    .onConflict('id').ignore().returning('id');
}

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
}

/** A patch as its columns take it: the jsonb ones as JSON text. */
function encoded(patch: PaymentPatch): Record<string, unknown> {
  const { last_error: lastError, pending_operation: pending, next_action: nextAction, ...rest } = patch;
  return {
    ...rest,
    ...(lastError !== undefined ? { last_error: lastError === null ? null : json(lastError) } : {}),
    ...(pending !== undefined ? { pending_operation: pending === null ? null : json(pending) } : {}),
    ...(nextAction !== undefined ? { next_action: nextAction === null ? null : json(nextAction) } : {}),
  };
}

/** Changes a payment (in the caller's transaction, with the charge and events that go with it). */
export async function updatePayment(db: Knex, env: Environment, id: string, patch: PaymentPatch, alongside: readonly Alongside[] = []): Promise<PaymentRow> {
  const update = paymentsTable(db, env).where({ id })
    .update({ ...encoded(patch), updated_at: new Date() })
    .returning('*');
  const [row]: PaymentRow[] = await withAlongside(update, alongside);
  return row;
}

/** A payment's status, its row locked until the transaction ends (a cancel decides on it). */
export async function lockPaymentStatus(trx: Knex.Transaction, env: Environment, id: string): Promise<PaymentStatus | undefined> {
  const row = await payments(trx, env).where({ id }).forUpdate().first('status');
  return row?.status;
}

export interface PaymentFilter { status?: PaymentStatus; customer_id?: string }

/** Where a payments list starts: after or before one of the account's payments (by id), or at a page number. */

/**
 * An account's payments, newest first, one page of them. Undefined when the cursor payment is not one of
 * the account's (another account's payment is no cursor: its place is not revealed).
 */
export async function listPayments(
  db: Knex, env: Environment, accountId: string, filter: PaymentFilter, start: ListStart, limit: number,
): Promise<KeysetPage<AnsweredPayment> | undefined> {
  const base = () => {
    const q = answeredPayments(db, env).where({ account_id: accountId });
    if (filter.status) void q.where({ status: filter.status });
    if (filter.customer_id) void q.where({ customer_id: filter.customer_id });
    return q;
  };
  if ('page' in start) return keysetPage(db, base, { page: start.page, limit });
  const cursorPayment = () => payments(db, env).where({ id: 'startingAfter' in start ? start.startingAfter : start.endingBefore, account_id: accountId });
  const cursor: Cursor = cursorPayment().select('created_at', 'id');
  const page = await keysetPage(db, base, 'startingAfter' in start ? { startingAfter: cursor, limit } : { endingBefore: cursor, limit });
  // A page with rows had its cursor; only an empty one asks whether the cursor is the account's at all.
  if (!page.rows.length && !(await cursorPayment().first('id'))) return undefined;
  return page;
}

export type StuckPayment = Pick<PaymentRow, 'id' | 'account_id' | 'amount' | 'currency' | 'updated_at'>;

/** Payments PROCESSING, untouched since before `cutoff`, longest first (the watchdog's look; a payment needing attention is told already). */
export async function processingSince(db: Knex, env: Environment, cutoff: Date, limit: number): Promise<StuckPayment[]> {
  return payments(db, env).where({ status: 'PROCESSING' }).where('updated_at', '<', cutoff).whereNull('needs_attention_at')
    .orderBy('updated_at').limit(limit).select('id', 'account_id', 'amount', 'currency', 'updated_at');
}

/**
 * Flags a payment for an operator (its workflow stopped acting on it), once: a flag already there keeps
 * its reason and time. Its status and amounts stay as they are. Answers whether the row was flagged now.
 */
export async function flagNeedsAttention(db: Knex, env: Environment, id: string, reason: string): Promise<boolean> {
  const rows = await paymentsTable(db, env).where({ id }).whereNull('needs_attention_at')
    .update({ needs_attention_reason: reason, needs_attention_at: db.fn.now(), updated_at: new Date() }).returning('id');
  return rows.length > 0;
}

export type PaymentNeedingAttention = Pick<PaymentRow,
  'id' | 'account_id' | 'amount' | 'currency' | 'status' | 'needs_attention_reason' | 'needs_attention_at' | 'last_error'>;

/** Payments flagged for an operator, the longest-flagged first (`ops payments:attention`). */
export async function needingAttention(db: Knex, env: Environment, filter: { accountId?: string }, limit: number): Promise<PaymentNeedingAttention[]> {
  const q = payments(db, env).whereNotNull('needs_attention_at');
  if (filter.accountId) void q.where({ account_id: filter.accountId });
  return q.orderBy('needs_attention_at').limit(limit)
    .select('id', 'account_id', 'amount', 'currency', 'status', 'needs_attention_reason', 'needs_attention_at', 'last_error');
}

// ---------------------------------------------------------------------------------------------------
// Charges: one per attempt

export async function findCharge(db: Knex, env: Environment, id: string): Promise<ChargeRow | undefined> {
  return charges(db, env).where({ id }).first();
}

/** A charge, its row locked until the transaction ends (an outcome is being recorded on it). */
export async function lockCharge(trx: Knex.Transaction, env: Environment, id: string): Promise<ChargeRow | undefined> {
  return charges(trx, env).where({ id }).forUpdate().first();
}

export type NewCharge = Pick<ChargeRow,
  'id' | 'payment_id' | 'payment_method_id' | 'customer_id' | 'account_id' | 'amount' | 'currency' | 'installments'
  | 'attempt_no' | 'routing_plan_id' | 'payment_provider_id' | 'payment_provider_config_id' | 'payment_provider_method_id'
  | 'security' | 'payment_provider_config_snapshot'>;

/**
 * Writes an attempt's charge in CREATED, unless it exists (the attempt is retried with the same id):
 * answers the row written, or undefined when it was there.
 */
export async function insertCharge(db: Knex, env: Environment, charge: NewCharge): Promise<ChargeRow | undefined> {
  const [row]: ChargeRow[] = await chargesTable(db, env).insert({
    ...charge, status: 'CREATED', security: json(charge.security), payment_provider_config_snapshot: json(charge.payment_provider_config_snapshot),
  }).onConflict('id').ignore().returning('*');
  return row;
}

/** A charge as an attempt knows it without reading it: every column but its timestamps, which are Postgres's. */
export type ChargeState = Omit<ChargeRow, 'created_at' | 'updated_at'>;

/**
 * A new charge's row as its insert writes it: CREATED, the table's defaults filled in and both timestamps
 * `at` (the worker's clock, as its payment's row written with it).
 */
export function newChargeRow(charge: NewCharge, at: Date): ChargeRow {
  return {
    ...charge,
    status: 'CREATED', authorized_amount: 0, captured_amount: 0, refunded_amount: 0, pending_refund_amount: 0,
    transaction: {}, details: {}, metadata: {}, exchanges: [], performance: {}, routing_origin: 'MERCHANT_DIRECT',
    decline_code: null, provider_reference: null, authentication_sealed: null, return_params_sealed: null,
    created_at: at, updated_at: at,
  };
}

/**
 * The insert of `charge` (newChargeRow's) to run with its payment's insert, unrun: written only if the
 * payment's row is (insertWithFirst, db/knex.ts), so a create retried after its plan changed never writes
 * the charge of a plan that was not stored.
 */
export function chargeInsertWithPayment(db: Knex, env: Environment, charge: ChargeRow): Knex.QueryBuilder {
  return insertWithFirst(db, envTable(env, 'charges'), [charge]);
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

/** Changes a charge; `exchanges` are appended to those it has. */
export async function updateCharge(db: Knex, env: Environment, id: string, patch: ChargePatch, alongside: readonly Alongside[] = []): Promise<ChargeRow> {
  return (await updateChargeWhere(db, env, { id }, patch, alongside))!;
}

/**
 * Changes a charge only while it is still in `status` (an outcome computed from the row as its attempt
 * wrote it, without locking it first); undefined when it no longer is.
 */
export async function updateChargeIn(
  db: Knex, env: Environment, id: string, status: ChargeStatus, patch: ChargePatch, alongside: readonly Alongside[] = [],
): Promise<ChargeRow | undefined> {
  return updateChargeWhere(db, env, { id, status }, patch, alongside);
}

async function updateChargeWhere(
  db: Knex, env: Environment, where: { id: string; status?: ChargeStatus }, patch: ChargePatch, alongside: readonly Alongside[],
): Promise<ChargeRow | undefined> {
  const update = chargesTable(db, env).where(where).update(chargeSet(db, patch, new Date())).returning('*');
  const [row]: ChargeRow[] = await withAlongside(update, alongside);
  return row;
}

/** A charge patch as its columns take it: jsonb as JSON text, `exchanges` appended. */
function chargeSet(db: Knex, patch: ChargePatch, at: Date): Record<string, unknown> {
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
  return { ...payment, ...patch, updated_at: at, version: payment.version + 1 };
}

/** What an outcome's one statement holds a payment's row to: as its attempt read or wrote it. */
export type PaymentGuard = Pick<PaymentRow, 'id' | 'version'>;

/**
 * The update of a charge still CREATED that records its attempt's outcome, unrun, as the first CTE of one
 * statement with everything that goes with it (the payment's update, the cards' and the health's, the
 * events: each written only if this one is, db/knex.ts). It applies only while the charge is CREATED and
 * its payment's row is still `payment` (its `version`, which every update of a payment moves on, even
 * two in the same millisecond): that row is locked by the check (`FOR UPDATE`), so nothing changes it
 * before the statement's own update of it. Returns the charge's id when it applies, nothing when it does
 * not (then nothing is written).
 */
export function chargeOutcomeUpdate(db: Knex, env: Environment, id: string, payment: PaymentGuard, patch: ChargePatch, at: Date): Knex.QueryBuilder {
  return chargesTable(db, env).where({ id, status: 'CREATED' })
    .whereExists((unchanged) => {
      void unchanged.select(1).from(envTable(env, 'payments')).where({ id: payment.id, version: payment.version }).forUpdate();
    })
    .update(chargeSet(db, patch, at)).returning('id');
}

/** A payment's update to run with chargeOutcomeUpdate, unrun: written only if the charge's is. */
export function paymentUpdateWithCharge(db: Knex, env: Environment, id: string, patch: PaymentPatch, at: Date): Knex.QueryBuilder {
  return onlyWithFirst(paymentsTable(db, env).where({ id }).update({ ...encoded(patch), updated_at: at }));
}

/** The charge a processor knows by `providerReference`, among those sent through one config. */
export async function findChargeByProviderReference(
  db: Knex, env: Environment, configId: string, providerReference: string,
): Promise<ChargeRow | undefined> {
  return charges(db, env).where({ payment_provider_config_id: configId, provider_reference: providerReference }).first();
}

/** The charges of some payments, each payment's in attempt order (reads with include_charges). */
export async function chargesOfPayments(db: Knex, env: Environment, paymentIds: string[]): Promise<AnsweredCharge[]> {
  if (!paymentIds.length) return [];
  return answeredCharges(db, env).whereIn('payment_id', paymentIds).orderBy('created_at').orderBy('attempt_no');
}
