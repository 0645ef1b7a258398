import type { Knex } from 'knex';
import type { DisputeEvidence, DisputeFunds, DisputeReason, DisputeStatus } from '../lib/providers/disputes';
import { envTable, type Environment } from './environments';
import { accountListPage, type KeysetPage, type ListStart } from './page';
import type { ChargeDisputes } from './payment-rows';
import { chargeDisputesSql } from './payments';

/**
 * The disputes store: each environment's `disputes` (docs/disputes.md). A dispute's workflow writes its
 * row (activities/disputes.ts); the API reads it, and answers whether a charge is disputed.
 */

/** Money a dispute moved, as the API shows it (`balance_transactions`). */
export interface DisputeBalanceTransaction extends DisputeFunds { event_id: string; at: string }

export interface DisputeRow {
  id: string;
  account_id: string;
  payment_id: string;
  charge_id: string;
  payment_provider_config_id: string;
  processor_dispute_id: string;
  amount: number;
  currency: string;
  reason: DisputeReason;
  processor_reason: string | null;
  status: DisputeStatus;
  status_at: Date;
  is_inquiry: boolean;
  evidence_due_by: Date | null;
  evidence: DisputeEvidence;
  evidence_submitted_at: Date | null;
  reminded_at: Date | null;
  overdue_at: Date | null;
  balance_transactions: DisputeBalanceTransaction[];
  applied_event_ids: string[];
  exchanges: Record<string, unknown>[];
  created_at: Date;
  updated_at: Date;
}

const disputes = (db: Knex, env: Environment) => db<DisputeRow>(envTable(env, 'disputes'));

export async function findDispute(db: Knex, env: Environment, id: string): Promise<DisputeRow | undefined> {
  return disputes(db, env).where({ id }).first();
}

/** The row, locked for the rest of the transaction: an event, a reminder or an answer reads and writes it as one. */
export async function lockDispute(trx: Knex.Transaction, env: Environment, id: string): Promise<DisputeRow | undefined> {
  return disputes(trx, env).where({ id }).forUpdate().first();
}

const JSON_COLUMNS = ['evidence', 'balance_transactions', 'applied_event_ids', 'exchanges'] as const;

function encoded(row: Partial<DisputeRow>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row };
  for (const key of JSON_COLUMNS) if (key in row) out[key] = JSON.stringify(row[key]);
  return out;
}

/** Writes a new dispute; one already there (the same id) is left as it is. */
export async function insertDispute(db: Knex, env: Environment, row: Omit<DisputeRow, 'created_at' | 'updated_at'>): Promise<void> {
  await disputes(db, env).insert(encoded(row) as never).onConflict('id').ignore();
}

export type DisputePatch = Partial<Omit<DisputeRow, 'id' | 'account_id' | 'payment_id' | 'charge_id' | 'created_at' | 'updated_at'>>;

export async function updateDispute(db: Knex, env: Environment, id: string, patch: DisputePatch): Promise<DisputeRow> {
  const [row] = await disputes(db, env).where({ id }).update({ ...encoded(patch), updated_at: db.fn.now() } as never).returning('*');
  return row as DisputeRow;
}

/** What the disputes of some payments' charges add up to (chargeDisputesSql), in one query. */
export async function disputesOfPayments(db: Knex, env: Environment, paymentIds: string[]): Promise<ChargeDisputes[]> {
  if (!paymentIds.length) return [];
  const [row] = (await db.raw(`select (${chargeDisputesSql(env, 'payment_id = any(?)')}) as disputes`, [paymentIds])).rows as { disputes: ChargeDisputes[] | null }[];
  return row.disputes ?? [];
}

/** Whether a charge has a chargeback still open or lost: such a charge is not refunded (409 charge_disputed). */
export async function chargeHasOpenDispute(db: Knex, env: Environment, chargeId: string): Promise<boolean> {
  return Boolean(await disputes(db, env).where({ charge_id: chargeId }).whereNotIn('status', ['WON', 'WARNING_CLOSED']).first('id'));
}

export interface DisputeFilter { status?: DisputeStatus; payment_id?: string }

/** An account's disputes, newest first, by keyset; undefined when the cursor is not one of them. */
export async function listDisputes(
  db: Knex, env: Environment, accountId: string, filter: DisputeFilter, start: ListStart, limit: number,
): Promise<KeysetPage<DisputeRow> | undefined> {
  const base = () => {
    const q = disputes(db, env).where({ account_id: accountId });
    if (filter.status) void q.where({ status: filter.status });
    if (filter.payment_id) void q.where({ payment_id: filter.payment_id });
    return q;
  };
  return accountListPage(db, () => disputes(db, env), accountId, base, start, limit);
}
