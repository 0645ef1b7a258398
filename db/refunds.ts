import { paged, type Page } from './page';
import type { Knex } from 'knex';
import {
  CAPTURED_CHARGE_STATUSES, REFUND_TRANSITIONS, REFUNDABLE_CHARGE_STATUSES, RefundReason, RefundStatus, RefundWorkflowInput, wasCaptured,
} from '../contracts/refunds';
import { envTable, Environment } from './environments';
import type { ChargeRow, PaymentRow } from './payments';

/**
 * The refunds store: the `refunds` table, and the refund side of a charge's money (`refunded_amount`,
 * `pending_refund_amount`) and of its payment (`amount_refunded`). Reserving and settling move those
 * columns together with the refund row, so they live here and nowhere else (docs/payments.md).
 */

export interface RefundRow {
  id: string;
  account_id: string;
  charge_id: string;
  payment_id: string;
  status: RefundStatus;
  reason: RefundReason | null;
  reason_other: string | null;
  amount: number;
  currency: string;
  metadata: Record<string, unknown>;
  failure_reason: string | null;
  created_at: Date;
  updated_at: Date;
}

/** The columns of a charge a refund reads: what was captured, what is refunded or reserved, and where. */
export type RefundTargetCharge = Pick<ChargeRow,
  'id' | 'payment_id' | 'account_id' | 'status' | 'captured_amount' | 'refunded_amount' | 'pending_refund_amount'
  | 'payment_provider_config_id' | 'provider_reference'>;

const TARGET_COLUMNS = [
  'id', 'payment_id', 'account_id', 'status', 'captured_amount', 'refunded_amount', 'pending_refund_amount',
  'payment_provider_config_id', 'provider_reference',
] as const;

/** What is left to refund on a charge: captured − refunded − reserved. */
export function refundableAmount(charge: Pick<RefundTargetCharge, 'captured_amount' | 'refunded_amount' | 'pending_refund_amount'>): number {
  return Number(charge.captured_amount) - Number(charge.refunded_amount) - Number(charge.pending_refund_amount);
}

const refunds = (db: Knex, env: Environment) => db<RefundRow>(envTable(env, 'refunds'));
const charges = (db: Knex, env: Environment) => db<ChargeRow>(envTable(env, 'charges'));

// ---------------------------------------------------------------------------------------------------
// Reads (API)

export async function findRefund(db: Knex, env: Environment, id: string): Promise<RefundRow | undefined> {
  return refunds(db, env).where({ id }).first();
}

export interface RefundFilter { payment_id?: string; charge_id?: string; status?: RefundStatus }

/** An account's refunds, newest first, one page of them, and how many there are in all. */
export async function listRefunds(
  db: Knex, env: Environment, accountId: string, filter: RefundFilter, page: Page,
): Promise<{ rows: RefundRow[]; total: number }> {
  const base = () => {
    const q = refunds(db, env).where({ account_id: accountId });
    if (filter.payment_id) void q.where({ payment_id: filter.payment_id });
    if (filter.charge_id) void q.where({ charge_id: filter.charge_id });
    if (filter.status) void q.where({ status: filter.status });
    return q;
  };
  return paged(base, page);
}

/** A payment of the account, by id, with its status (what a refund by payment id starts from). */
export async function findPaymentToRefund(
  db: Knex, env: Environment, accountId: string, paymentId: string,
): Promise<Pick<PaymentRow, 'id' | 'status'> | undefined> {
  return db<PaymentRow>(envTable(env, 'payments')).where({ id: paymentId, account_id: accountId }).first('id', 'status');
}

/** The payment's captured charge (the latest attempt that was captured), if any. */
export async function capturedChargeOfPayment(db: Knex, env: Environment, paymentId: string): Promise<RefundTargetCharge | undefined> {
  return charges(db, env).where({ payment_id: paymentId }).whereIn('status', [...CAPTURED_CHARGE_STATUSES])
    .orderBy('attempt_no', 'desc').first(...TARGET_COLUMNS);
}

/** A charge of the account, by id. */
export async function findChargeToRefund(db: Knex, env: Environment, accountId: string, chargeId: string): Promise<RefundTargetCharge | undefined> {
  return charges(db, env).where({ id: chargeId, account_id: accountId }).first(...TARGET_COLUMNS);
}

// ---------------------------------------------------------------------------------------------------
// Reserving (the refund workflow's first step), inside the caller's transaction

export type Reservation =
  | { outcome: 'existing' | 'reserved'; refund: RefundRow; providerConfigId: string | null }
  /** The charge is not (or no longer) refundable; `chargeStatus` is UNKNOWN when there is no such charge. */
  | { outcome: 'invalid_state'; chargeStatus: string }
  | { outcome: 'exceeds_available'; available: number };

/** Why a reservation did not match: the charge is not refundable, or less is left than asked. */
async function refusal(trx: Knex.Transaction, env: Environment, chargeId: string): Promise<Reservation> {
  const charge = await charges(trx, env).where({ id: chargeId }).first('status', 'captured_amount', 'refunded_amount', 'pending_refund_amount');
  if (!charge || !wasCaptured(charge.status)) {
    return { outcome: 'invalid_state', chargeStatus: charge?.status ?? 'UNKNOWN' };
  }
  return { outcome: 'exceeds_available', available: refundableAmount(charge) };
}

/**
 * Reserves the refund's amount on the charge and writes the PENDING refund row, or refuses. One
 * conditional UPDATE does the reserving: it matches only while captured − refunded − pending covers the
 * amount, so concurrent refunds can never over-refund. Idempotent: a refund row that exists is returned.
 */
export async function reserveRefund(trx: Knex.Transaction, input: RefundWorkflowInput): Promise<Reservation> {
  const env = input.environment;
  const existing = await refunds(trx, env).where({ id: input.refundId }).first();
  const charge = await charges(trx, env).where({ id: input.chargeId }).first('payment_provider_config_id');
  const providerConfigId = charge?.payment_provider_config_id ?? null;
  if (existing) return { outcome: 'existing', refund: existing, providerConfigId };
  let amount = input.amount;
  if (amount === undefined) {
    // "All that remains", read under the row lock so that no other reservation moves it meanwhile.
    const locked = await charges(trx, env).where({ id: input.chargeId }).forUpdate()
      .first('captured_amount', 'refunded_amount', 'pending_refund_amount');
    const remaining = locked ? refundableAmount(locked) : 0;
    if (remaining <= 0) return refusal(trx, env, input.chargeId);
    amount = remaining;
  }
  const reserved = await trx.raw<{ rows: { id: string; currency: string }[] }>(
    `UPDATE ?? SET pending_refund_amount = pending_refund_amount + ?, updated_at = now()
      WHERE id = ? AND account_id = ? AND status IN (${REFUNDABLE_CHARGE_STATUSES.map(() => '?').join(', ')})
        AND captured_amount - refunded_amount - pending_refund_amount >= ?
      RETURNING id, currency`,
    [envTable(env, 'charges'), amount, input.chargeId, input.accountId, ...REFUNDABLE_CHARGE_STATUSES, amount],
  );
  if (reserved.rows.length === 0) return refusal(trx, env, input.chargeId);
  const [refund] = await trx(envTable(env, 'refunds')).insert({
    id: input.refundId,
    account_id: input.accountId,
    charge_id: input.chargeId,
    payment_id: input.paymentId,
    status: 'PENDING',
    reason: input.reason ?? null,
    reason_other: input.reasonOther ?? null,
    amount,
    currency: reserved.rows[0].currency,
    metadata: JSON.stringify(input.metadata ?? {}),
  }).returning<RefundRow[]>('*');
  return { outcome: 'reserved', refund, providerConfigId };
}

// ---------------------------------------------------------------------------------------------------
// Asking the provider and settling

/** A refund and the charge it refunds: what the provider is asked with. */
export async function findRefundWithCharge(
  db: Knex, env: Environment, refundId: string,
): Promise<{ refund: RefundRow; charge: RefundTargetCharge | undefined } | undefined> {
  const refund = await findRefund(db, env, refundId);
  if (!refund) return undefined;
  return { refund, charge: await charges(db, env).where({ id: refund.charge_id }).first(...TARGET_COLUMNS) };
}

/** The provider's verdict on a refund: approved, or declined for `failureReason`. */
export type RefundVerdict = { approved: true } | { approved: false; failureReason: string };

export type Settlement =
  /** Settled before (a retry), or a verdict that no longer applies (an approval of a reversed refund): nothing changed. */
  | { outcome: 'unchanged'; refund: RefundRow }
  | { outcome: 'succeeded'; refund: RefundRow; charge: ChargeRow }
  | { outcome: 'failed'; refund: RefundRow }
  /** A SUCCEEDED refund the processor reported failed afterwards: its amount is refundable again. */
  | { outcome: 'reversed'; refund: RefundRow; charge: ChargeRow };

/**
 * Records the provider's verdict once, in the caller's transaction: the refund row is locked and the
 * contract's REFUND_TRANSITIONS must allow the move. From PENDING, approved moves the reserved amount
 * to refunded (charge and payment: a payment has one captured charge, so the payment follows it) and
 * declined releases it; from SUCCEEDED, declined takes the refunded amount back (`reverseRefunded`).
 * `exchange` joins the charge's log.
 */
export async function settleRefund(
  trx: Knex.Transaction, env: Environment, refundId: string, verdict: RefundVerdict, exchange: unknown,
): Promise<Settlement | undefined> {
  const refund = await refunds(trx, env).where({ id: refundId }).forUpdate().first();
  if (!refund) return undefined;
  if (!REFUND_TRANSITIONS[refund.status].includes(verdict.approved ? 'SUCCEEDED' : 'FAILED')) return { outcome: 'unchanged', refund };
  const amount = Number(refund.amount);
  const log = trx.raw('exchanges || ?::jsonb', [JSON.stringify([exchange])]);
  if (!verdict.approved && refund.status === 'SUCCEEDED') return reverseRefunded(trx, env, refund, verdict.failureReason, log);
  if (verdict.approved) {
    const [charge] = await trx(envTable(env, 'charges')).where({ id: refund.charge_id }).update({
      refunded_amount: trx.raw('refunded_amount + ?', [amount]),
      pending_refund_amount: trx.raw('pending_refund_amount - ?', [amount]),
      status: trx.raw(`CASE WHEN refunded_amount + ? >= captured_amount THEN 'REFUNDED' ELSE 'PARTIALLY_REFUNDED' END`, [amount]),
      exchanges: log,
      updated_at: trx.fn.now(),
    }).returning<ChargeRow[]>('*');
    await trx(envTable(env, 'payments')).where({ id: refund.payment_id }).update({
      amount_refunded: trx.raw('amount_refunded + ?', [amount]), status: charge.status, updated_at: trx.fn.now(),
    });
    const [settled] = await refunds(trx, env).where({ id: refund.id })
      .update({ status: 'SUCCEEDED', updated_at: trx.fn.now() }).returning('*');
    return { outcome: 'succeeded', refund: settled, charge };
  }
  await trx(envTable(env, 'charges')).where({ id: refund.charge_id }).update({
    pending_refund_amount: trx.raw('pending_refund_amount - ?', [amount]), exchanges: log, updated_at: trx.fn.now(),
  });
  const [failed] = await refunds(trx, env).where({ id: refund.id })
    .update({ status: 'FAILED', failure_reason: verdict.failureReason, updated_at: trx.fn.now() }).returning('*');
  return { outcome: 'failed', refund: failed };
}

/**
 * The processor took back a refund it had reported succeeded (the money never reached the customer):
 * the refund FAILED, its amount off the charge's and the payment's refunded totals, so it is refundable
 * again, and their statuses back to what the remaining refunds make them (CAPTURED / SUCCEEDED when none).
 */
async function reverseRefunded(trx: Knex.Transaction, env: Environment, refund: RefundRow, failureReason: string, log: Knex.Raw): Promise<Settlement> {
  const amount = Number(refund.amount);
  const [charge] = await trx(envTable(env, 'charges')).where({ id: refund.charge_id }).update({
    refunded_amount: trx.raw('refunded_amount - ?', [amount]),
    status: trx.raw(`CASE WHEN refunded_amount - ? > 0 THEN 'PARTIALLY_REFUNDED' ELSE 'CAPTURED' END`, [amount]),
    exchanges: log,
    updated_at: trx.fn.now(),
  }).returning<ChargeRow[]>('*');
  await trx(envTable(env, 'payments')).where({ id: refund.payment_id }).update({
    amount_refunded: trx.raw('amount_refunded - ?', [amount]),
    status: charge.status === 'CAPTURED' ? 'SUCCEEDED' : charge.status,
    updated_at: trx.fn.now(),
  });
  const [reversed] = await refunds(trx, env).where({ id: refund.id })
    .update({ status: 'FAILED', failure_reason: failureReason, updated_at: trx.fn.now() }).returning('*');
  return { outcome: 'reversed', refund: reversed, charge };
}
