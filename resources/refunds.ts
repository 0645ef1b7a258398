import { Static, Type } from '@sinclair/typebox';
import type { RefundRow } from '../db/refunds';
import { REFUND_REASONS, REFUND_STATUSES } from '../contracts/refunds';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const NullableStr = Type.Union([Type.String(), Type.Null()]);

/** A refund, with the payment it belongs to and why it failed, when it did. */
export const RefundSchema = Resource('refund', {
  id: Type.String(), account_id: Type.String(), charge_id: Type.String(), payment_id: Type.String(),
  status: Type.Union(REFUND_STATUSES.map((s) => Type.Literal(s))),
  reason: Type.Union([...REFUND_REASONS.map((r) => Type.Literal(r)), Type.Null()]), reason_other: NullableStr,
  amount: Type.Integer(), currency: Type.String(), metadata: Type.Record(Type.String(), Type.Unknown()),
  failure_reason: NullableStr, created_at: Timestamp, updated_at: Timestamp,
});

export type Refund = Static<typeof RefundSchema>;

export function serializeRefund(row: RefundRow): Refund {
  return {
    object: 'refund',
    id: row.id,
    account_id: row.account_id,
    charge_id: row.charge_id,
    payment_id: row.payment_id,
    status: row.status,
    reason: row.reason ?? null,
    reason_other: row.reason_other ?? null,
    amount: Number(row.amount),
    currency: row.currency,
    metadata: row.metadata ?? {},
    failure_reason: row.failure_reason ?? null,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
