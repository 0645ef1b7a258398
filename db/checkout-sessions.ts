import type { Knex } from 'knex';
import type { CheckoutPaymentStatus, CheckoutSessionInput, CheckoutSessionStatus, LineItem } from '../contracts/checkout';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';

/**
 * The checkout sessions store: each environment's `checkout_sessions` table. A session's row is written
 * by its workflow's first activity and moves once, from OPEN to COMPLETE or EXPIRED: each move is an
 * `UPDATE … WHERE status = 'OPEN'`, so a late expiry after a completion (or the reverse) changes nothing.
 */

export interface CheckoutSessionRow {
  id: string;
  account_id: string;
  status: CheckoutSessionStatus;
  payment_status: CheckoutPaymentStatus;
  amount: number;
  currency: string;
  line_items: LineItem[] | null;
  success_url: string | null;
  cancel_url: string | null;
  customer_id: string | null;
  save_payment_method: boolean;
  auto_capture: boolean;
  payment_id: string;
  payment_link_id: string | null;
  metadata: Record<string, unknown>;
  expires_at: Date;
  created_at: Date;
  updated_at: Date;
}

/** A session as the API answers it: with its payment's `client_secret` (null when the payment has none). */
export type AnsweredCheckoutSession = CheckoutSessionRow & { client_secret: string | null };

const sessions = (db: Knex, env: Environment) => db<CheckoutSessionRow>(envTable(env, 'checkout_sessions'));

/** The session's row joined with its payment's client_secret, which the payments store writes with the payment's row. */
const answered = (db: Knex, env: Environment) => db(`${envTable(env, 'checkout_sessions')} as cs`)
  .leftJoin(`${envTable(env, 'payments')} as p`, 'p.id', 'cs.payment_id')
  .select<AnsweredCheckoutSession[]>('cs.*', 'p.client_secret');

export async function findCheckoutSession(db: Knex, env: Environment, id: string): Promise<CheckoutSessionRow | undefined> {
  return sessions(db, env).where({ id }).first();
}

export async function readCheckoutSession(db: Knex, env: Environment, id: string): Promise<AnsweredCheckoutSession | undefined> {
  return answered(db, env).where('cs.id', id).first();
}

/** The session a payment belongs to (one at most: `payment_id` is unique). */
export async function findCheckoutSessionOfPayment(db: Knex, env: Environment, paymentId: string): Promise<CheckoutSessionRow | undefined> {
  return sessions(db, env).where({ payment_id: paymentId }).first();
}

/** Writes the session's OPEN row from its workflow's input; a row with its id is left as it is (a retry). */
export async function insertCheckoutSession(db: Knex, env: Environment, input: CheckoutSessionInput): Promise<void> {
  await sessions(db, env).insert({
    id: input.sessionId,
    account_id: input.accountId,
    status: 'OPEN',
    payment_status: 'UNPAID',
    amount: input.amount,
    currency: input.currency,
    line_items: input.lineItems === null ? null : JSON.stringify(input.lineItems),
    success_url: input.successUrl,
    cancel_url: input.cancelUrl,
    customer_id: input.customerId ?? null,
    save_payment_method: input.savePaymentMethod,
    auto_capture: input.autoCapture,
    payment_id: input.paymentId,
    payment_link_id: input.paymentLinkId ?? null,
    metadata: JSON.stringify(input.metadata),
    expires_at: new Date(input.expiresAt),
  } as never).onConflict('id').ignore();
}

/**
 * Moves an OPEN session to COMPLETE (paid) or EXPIRED, in the caller's transaction; answers the row as
 * moved, or undefined when it was not OPEN (it completed or expired before: nothing changes).
 */
export async function closeCheckoutSession(
  trx: Knex, env: Environment, id: string, status: 'COMPLETE' | 'EXPIRED',
): Promise<CheckoutSessionRow | undefined> {
  const [row] = await sessions(trx, env).where({ id, status: 'OPEN' })
    .update({ status, ...(status === 'COMPLETE' ? { payment_status: 'PAID' as const } : {}), updated_at: trx.fn.now() as unknown as Date })
    .returning('*');
  return row as CheckoutSessionRow | undefined;
}

export interface CheckoutSessionFilter { status?: CheckoutSessionStatus }

/** An account's sessions, newest first, by keyset (as the payments list); undefined when the cursor is not one of them. */
export async function listCheckoutSessions(
  db: Knex, env: Environment, accountId: string, filter: CheckoutSessionFilter, start: ListStart, limit: number,
): Promise<KeysetPage<AnsweredCheckoutSession> | undefined> {
  const base = () => {
    const q = sessions(db, env).where({ account_id: accountId });
    if (filter.status) void q.where({ status: filter.status });
    return q;
  };
  const page = await accountListPage(db, () => sessions(db, env), accountId, base, start, limit);
  if (!page) return undefined;
  const secrets = page.rows.length
    ? new Map((await db(envTable(env, 'payments')).whereIn('id', page.rows.map((r) => r.payment_id)).select<{ id: string; client_secret: string | null }[]>('id', 'client_secret'))
      .map((p) => [p.id, p.client_secret]))
    : new Map<string, string | null>();
  return { ...page, rows: page.rows.map((row) => ({ ...row, client_secret: secrets.get(row.payment_id) ?? null })) };
}
