import { keysetPage, type Cursor, type KeysetPage, type ListStart } from './page';
import type { Knex } from 'knex';
import type { PaymentStatus } from '../contracts/payments';
import { envTable, type Environment } from './environments';
import { isoFromJsonTimestamp } from '../lib/timestamps';
import { insertIfFirstWrote, PREPARED, runPrepared, withAlongside, type NamedAlongside, type PreparedStatement } from './knex';
import {
  answeredCharges, answeredPayments, charges, chargeSet, chargesTable, encoded, json, PAYMENT_WRITTEN, payments, paymentsTable, UNSHOWN_PAYMENT_COLUMNS,
  withFailedConfirmation, type AnsweredCharge, type ChargeDisputes, type ChargePatch, type ChargeRow, type ChargeStatus, type ListedPayment, type PaymentPatch, type PaymentRow, type ReadPayment,
} from './payment-rows';

// The rows' types and their patches live in db/payment-rows.ts, what recording an outcome writes in
// db/payment-outcomes.ts; their importers read them from here too.
export type {
  AnsweredCharge, AnsweredPayment, ChargeDetails, ChargePatch, ChargePerformance, ChargeRow, ChargeState, ChargeStatus, NextAction,
  ChargeDisputes, ListedPayment, PaymentGuard, PaymentLastError, PaymentPatch, PaymentRow, PendingOperationRecord, ReadPayment, ShownPayment,
  WithClientSecret,
} from './payment-rows';
export { chargeAfter, paymentAfter, PAYMENT_WRITTEN } from './payment-rows';

/**
 * The payments store: each environment's `payments` and `charges` tables (docs/payments.md), the only
 * module that queries them — with db/payment-outcomes.ts, which records an attempt's outcome — except the refund columns (`amount_refunded`, `refunded_amount`,
 * `pending_refund_amount`), which db/refunds.ts moves together with the refund rows it reserves.
 */

// ---------------------------------------------------------------------------------------------------
// Payments

export async function findPayment(db: Knex, env: Environment, id: string): Promise<PaymentRow | undefined> {
  return payments(db, env).where({ id }).first();
}

/** A payment as its answers show it (SHOWN_PAYMENT_COLUMNS, the timestamps as text): a webhook's payload. */
export async function findShownPayment(db: Knex, env: Environment, id: string): Promise<ListedPayment | undefined> {
  return shownPayments(db, env).where({ id }).first().options(PREPARED);
}

/** Every column of a payment row, in the table's order (test/api/payment-read.test.ts holds it to the table). */
export const PAYMENT_COLUMNS = [
  'id', 'account_id', 'customer_id', 'checkout_session_id', 'payment_method_id', 'amount', 'currency', 'status', 'auto_capture',
  'secure_mode', 'installments', 'routing_origin', 'routing', 'amount_capturable', 'amount_received', 'amount_refunded',
  'cancellation_reason', 'last_error', 'metadata', 'created_at', 'updated_at', 'pending_operation', 'next_action', 'return_url',
  'needs_attention_reason', 'needs_attention_at', 'version', 'workflow_run_id', 'client_secret', 'failed_confirmations',
] as const satisfies readonly (keyof ReadPayment)[];

/**
 * The columns an answer about a payment shows: every one but UNSHOWN_PAYMENT_COLUMNS. A list reads only
 * these (pg decodes every field it is given: the other five were a sixth of a page's), and so does a
 * webhook's payload.
 */
export const SHOWN_PAYMENT_COLUMNS = PAYMENT_COLUMNS.filter((column) => !(UNSHOWN_PAYMENT_COLUMNS as readonly string[]).includes(column));

/** Payments read with the columns their answers show, the timestamps as text (a list, a webhook's payload). */
const shownPayments = (db: Knex, env: Environment) => answeredPayments(db, env).select<ListedPayment[]>(SHOWN_PAYMENT_COLUMNS);

/** The API's most frequent statement (every GET of a payment, every command's answer), prepared per environment. */
const READ_PAYMENT: Record<Environment, PreparedStatement> = {
  production: readPaymentStatement('production', false),
  sandbox: readPaymentStatement('sandbox', false),
};

/** The same with the payment's charges: the answer to a create or confirm, which shows them, in one round trip. */
const READ_PAYMENT_WITH_CHARGES: Record<Environment, PreparedStatement> = {
  production: readPaymentStatement('production', true),
  sandbox: readPaymentStatement('sandbox', true),
};

/**
 * The row as one JSON value (`row_to_json` of its named columns), not 24 columns: pg builds a result's
 * field table and a parser per column on every execution (its RowDescription comes with each), which
 * cost more of the API's CPU per read than parsing the row itself; one JSON column is one field and one
 * JSON.parse, whose objects are also cheaper to read from (docs/performance.md#the-read-path).
 * `withCharges` adds the charges as chargesOfPayments orders them, as one JSON array.
 */
function readPaymentStatement(env: Environment, withCharges: boolean): PreparedStatement {
  const columns = PAYMENT_COLUMNS.map((column) => `"${column}"`).join(', ');
  const charges = withCharges
    ? `, (select json_agg(c order by c.created_at, c.attempt_no) from ${envTable(env, 'charges')} c where c.payment_id = $1) as charges`
    : '';
  return {
    name: `read_payment_disputes${withCharges ? '_charges' : ''}_${env}`,
    text: `select row_to_json(p) as payment, (${chargeDisputesSql(env, 'payment_id = $1')}) as disputes${charges}
      from (select ${columns} from ${envTable(env, 'payments')} where "id" = $1) p`,
  };
}

/**
 * Per disputed charge of the payments `where` picks, what its disputes add up to, as one JSON array (null
 * when none): a charge is disputed while it has a dispute, and its amount is what its chargebacks claim.
 */
export function chargeDisputesSql(env: Environment, where: string): string {
  return `select json_agg(d) from (select payment_id, charge_id, coalesce(sum(amount) filter (where not is_inquiry), 0)::bigint as amount
      from ${envTable(env, 'disputes')} where ${where} group by payment_id, charge_id) d`;
}

/** JSON's timestamps are ISO-8601 with the session's offset: the API's form is UTC with milliseconds. */
function withApiTimestamps<T extends { created_at: string; updated_at: string }>(row: T): T {
  row.created_at = isoFromJsonTimestamp(row.created_at);
  row.updated_at = isoFromJsonTimestamp(row.updated_at);
  return row;
}

/**
 * A payment to answer with (GET, a command's answer): findPayment's row, its timestamps as text, with its
 * client_secret, its disputes and, `withCharges`, its charges (as chargesOfPayments reads them).
 */
export async function readPayment(db: Knex, env: Environment, id: string, { withCharges = false } = {}): Promise<ReadPayment | undefined> {
  const statement = (withCharges ? READ_PAYMENT_WITH_CHARGES : READ_PAYMENT)[env];
  const [row] = await runPrepared<{ payment: ReadPayment; disputes: ChargeDisputes[] | null; charges?: AnsweredCharge[] | null }>(db, statement, [id]);
  if (!row) return undefined;
  const payment = withApiTimestamps(row.payment);
  payment.disputes = row.disputes ?? [];
  if (withCharges) payment.charges = (row.charges ?? []).map(withApiTimestamps);
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
  const { failedConfirmation: _, ...columns } = confirmed;
  return withFailedConfirmation({
    ...payment,
    payment_method_id: null, status: 'CREATED', routing_origin: 'MERCHANT_DIRECT',
    amount_capturable: 0, amount_received: 0, amount_refunded: 0, cancellation_reason: null, last_error: null,
    pending_operation: null, next_action: null, return_url: null, needs_attention_reason: null, needs_attention_at: null,
    workflow_run_id: payment.workflow_run_id ?? null, failed_confirmations: 0,
    ...columns,
    created_at: at, updated_at: at, version: 0,
  }, confirmed);
}

/**
 * The insert of `row` (newPaymentRow's), unrun, for the events store to run with the events that show it
 * (`appendEventsOfWrite`, db/events.ts) under the name PAYMENT_WRITTEN: it returns the row's id when it
 * wrote the row and nothing when the payment exists (the activity that writes it is retried), and then
 * the events are not written either.
 */
export function paymentInsert(db: Knex, env: Environment, row: PaymentRow): Knex.QueryBuilder {
  const { routing, metadata, last_error: lastError, pending_operation: pending, next_action: nextAction, ...rest } = row;
  return paymentsTable(db, env)
    .insert({ ...rest, ...encoded(db, { last_error: lastError, pending_operation: pending, next_action: nextAction }), routing: json(routing), metadata: json(metadata) })
    .onConflict('id').ignore().returning('id');
}

/** Changes a payment (in the caller's transaction, with the charge and events that go with it). */
export async function updatePayment(db: Knex, env: Environment, id: string, patch: PaymentPatch, alongside: readonly NamedAlongside[] = []): Promise<PaymentRow> {
  const update = paymentsTable(db, env).where({ id })
    .update({ ...encoded(db, patch), updated_at: new Date() })
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
): Promise<KeysetPage<ListedPayment> | undefined> {
  const base = () => {
    const q = shownPayments(db, env).where({ account_id: accountId });
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
 * payment's row is (insertIfFirstWrote, db/knex.ts), so a create retried after its plan changed never writes
 * the charge of a plan that was not stored.
 */
export function chargeInsertWithPayment(db: Knex, env: Environment, charge: ChargeRow): Knex.QueryBuilder {
  return insertIfFirstWrote(db, envTable(env, 'charges'), [charge], PAYMENT_WRITTEN);
}

/** Changes a charge; `exchanges` are appended to those it has. */
export async function updateCharge(db: Knex, env: Environment, id: string, patch: ChargePatch, alongside: readonly NamedAlongside[] = []): Promise<ChargeRow> {
  return (await updateChargeWhere(db, env, { id }, patch, alongside))!;
}

/**
 * Changes a charge only while it is still in `status` (an outcome computed from the row as its attempt
 * wrote it, without locking it first); undefined when it no longer is.
 */
export async function updateChargeIn(
  db: Knex, env: Environment, id: string, status: ChargeStatus, patch: ChargePatch, alongside: readonly NamedAlongside[] = [],
): Promise<ChargeRow | undefined> {
  return updateChargeWhere(db, env, { id, status }, patch, alongside);
}

async function updateChargeWhere(
  db: Knex, env: Environment, where: { id: string; status?: ChargeStatus }, patch: ChargePatch, alongside: readonly NamedAlongside[],
): Promise<ChargeRow | undefined> {
  const update = chargesTable(db, env).where(where).update(chargeSet(db, patch, new Date())).returning('*');
  const [row]: ChargeRow[] = await withAlongside(update, alongside);
  return row;
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
