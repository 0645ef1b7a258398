import type { Knex } from 'knex';
import type { BillingReason, InvoiceAttempt, InvoiceLine, InvoiceStatus } from '../contracts/billing';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The invoices store: each environment's `invoices` (docs/billing.md#invoices). One invoice per
 * subscription, period and reason (`invoices_one_per_period`): the subscription's workflow makes and
 * settles them; the API reads them and sends its changes through that workflow.
 */

export interface InvoiceRow {
  id: string;
  account_id: string;
  subscription_id: string;
  customer_id: string;
  status: InvoiceStatus;
  billing_reason: BillingReason;
  currency: string;
  period_start: Date;
  period_end: Date;
  lines: InvoiceLine[];
  subtotal: number;
  amount_due: number;
  amount_paid: number;
  attempt_count: number;
  attempts: InvoiceAttempt[];
  next_payment_attempt: Date | null;
  payment_id: string | null;
  hosted_payment_url: string | null;
  finalized_at: Date | null;
  paid_at: Date | null;
  voided_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

const invoices = (db: Knex, env: Environment) => db<InvoiceRow>(envTable(env, 'invoices'));

export async function findInvoice(db: Knex, env: Environment, id: string): Promise<InvoiceRow | undefined> {
  return invoices(db, env).where({ id }).first();
}

export async function findInvoiceForPeriod(db: Knex, env: Environment, subscriptionId: string, periodStart: Date, reason: BillingReason): Promise<InvoiceRow | undefined> {
  return invoices(db, env).where({ subscription_id: subscriptionId, period_start: periodStart, billing_reason: reason }).first();
}

export type NewInvoice = Pick<InvoiceRow, 'id' | 'account_id' | 'subscription_id' | 'customer_id' | 'billing_reason' | 'currency' | 'period_start' | 'period_end' | 'lines' | 'subtotal' | 'amount_due'>;

/** Writes a period's invoice, once: a second try for the same period and reason finds the first's row (answered with `created: false`). */
export async function insertInvoice(db: Knex, env: Environment, invoice: NewInvoice): Promise<{ row: InvoiceRow; created: boolean }> {
  const written = await invoices(db, env).insert({ ...invoice, lines: JSON.stringify(invoice.lines) } as never)
    .onConflict(['subscription_id', 'period_start', 'billing_reason']).ignore().returning('id');
  const row = await findInvoiceForPeriod(db, env, invoice.subscription_id, invoice.period_start, invoice.billing_reason);
  return { row: row!, created: written.length > 0 };
}

export type InvoicePatch = Partial<Omit<InvoiceRow, 'id' | 'account_id' | 'subscription_id' | 'created_at' | 'updated_at'>>;

/** Writes a change to an invoice while it is in one of `from` (a step moves an invoice once); answers the row after, or undefined when it had moved on. */
export async function updateInvoice(db: Knex, env: Environment, id: string, from: InvoiceStatus[], patch: InvoicePatch): Promise<InvoiceRow | undefined> {
  const json: Record<string, unknown> = { ...patch, updated_at: db.fn.now() };
  for (const key of ['lines', 'attempts'] as const) if (key in patch) json[key] = JSON.stringify(patch[key]);
  const [row] = await invoices(db, env).where({ id }).whereIn('status', from).update(json as never).returning('*');
  return row as InvoiceRow | undefined;
}

/** The subscription's invoices still OPEN (being collected, or left by dunning). */
export async function openInvoicesOf(db: Knex, env: Environment, subscriptionId: string): Promise<InvoiceRow[]> {
  return invoices(db, env).where({ subscription_id: subscriptionId, status: 'OPEN' }).orderBy('created_at', 'asc');
}

export interface InvoiceFilter { subscription_id?: string; status?: InvoiceStatus; customer_id?: string }

/** An account's invoices, newest first, by keyset; undefined when the cursor is not one of them. */
export async function listInvoices(
  db: Knex, env: Environment, accountId: string, filter: InvoiceFilter, start: ListStart, limit: number,
): Promise<KeysetPage<InvoiceRow> | undefined> {
  const base = () => {
    const q = invoices(db, env).where({ account_id: accountId });
    if (filter.subscription_id) void q.where({ subscription_id: filter.subscription_id });
    if (filter.status) void q.where({ status: filter.status });
    if (filter.customer_id) void q.where({ customer_id: filter.customer_id });
    return q;
  };
  return accountListPage(db, () => invoices(db, env), accountId, base, start, limit);
}

/**
 * Claims the invoice's next payment attempt for `paymentId`: only while OPEN with `attemptCount` attempts
 * made, so an activity's retry finds the attempt its first try claimed (answered undefined) and pays with
 * that payment instead of a second one.
 */
export async function claimInvoiceAttempt(db: Knex, env: Environment, id: string, attemptCount: number, attempt: InvoiceAttempt): Promise<InvoiceRow | undefined> {
  const [row] = await invoices(db, env).where({ id, status: 'OPEN', attempt_count: attemptCount }).update({
    attempt_count: attemptCount + 1, payment_id: attempt.payment_id, next_payment_attempt: null,
    attempts: db.raw('attempts || ?::jsonb', [JSON.stringify([attempt])]), updated_at: db.fn.now(),
  } as never).returning('*');
  return row as InvoiceRow | undefined;
}
