import { Static, Type } from '@sinclair/typebox';
import type { InvoiceRow } from '../db/invoices';
import { INVOICE_STATUSES } from '../contracts/billing';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const NullableStr = Type.Union([Type.String(), Type.Null()]);
const Amount = Type.Integer({ description: 'minor units' });

export const InvoiceStatusSchema = Type.Union(INVOICE_STATUSES.map((s) => Type.Literal(s)));

export const InvoiceLineSchema = Type.Object({
  description: Type.String(),
  price_id: Type.String(),
  quantity: Type.Integer(),
  amount: Type.Integer({ description: 'minor units; negative for a proration credit' }),
  period_start: Type.String({ format: 'date-time' }),
  period_end: Type.String({ format: 'date-time' }),
  proration: Type.Boolean(),
}, { additionalProperties: true });

export const InvoiceAttemptSchema = Type.Object({
  payment_id: Type.String(), status: Type.String(), decline_code: NullableStr, at: Type.String({ format: 'date-time' }),
}, { additionalProperties: true });

/** A subscription's invoice for one period (docs/billing.md#invoices), paid by an ordinary payment. */
export const InvoiceSchema = Resource('invoice', {
  id: Type.String(),
  account_id: Type.String(),
  subscription_id: Type.String(),
  customer_id: Type.String(),
  status: InvoiceStatusSchema,
  billing_reason: Type.Union([Type.Literal('subscription_create'), Type.Literal('subscription_cycle'), Type.Literal('subscription_cancel')]),
  currency: Type.String(),
  period_start: Timestamp,
  period_end: Timestamp,
  lines: Type.Array(InvoiceLineSchema),
  subtotal: Amount,
  amount_due: Amount,
  amount_paid: Amount,
  amount_remaining: Type.Integer({ description: 'amount_due − amount_paid (0 once VOID or UNCOLLECTIBLE: nothing more is collected)' }),
  attempt_count: Type.Integer(),
  attempts: Type.Array(InvoiceAttemptSchema),
  next_payment_attempt: Timestamp,
  payment_id: Type.Union([Type.String(), Type.Null()], { description: 'the payment of the latest attempt' }),
  hosted_payment_url: Type.Union([Type.String(), Type.Null()], { description: 'where the customer authenticates a renewal the issuer wants authenticated' }),
  finalized_at: Timestamp,
  paid_at: Timestamp,
  voided_at: Timestamp,
  created_at: Timestamp,
  updated_at: Timestamp,
});

export type Invoice = Static<typeof InvoiceSchema>;

export function serializeInvoice(row: InvoiceRow): Invoice {
  const amountDue = Number(row.amount_due);
  const amountPaid = Number(row.amount_paid);
  const collectable = row.status === 'DRAFT' || row.status === 'OPEN';
  return {
    object: 'invoice',
    id: row.id,
    account_id: row.account_id,
    subscription_id: row.subscription_id,
    customer_id: row.customer_id,
    status: row.status,
    billing_reason: row.billing_reason,
    currency: row.currency,
    period_start: iso(row.period_start),
    period_end: iso(row.period_end),
    lines: (row.lines ?? []).map((l) => ({ ...l, amount: Number(l.amount) })),
    subtotal: Number(row.subtotal),
    amount_due: amountDue,
    amount_paid: amountPaid,
    amount_remaining: collectable ? Math.max(amountDue - amountPaid, 0) : 0,
    attempt_count: row.attempt_count,
    attempts: row.attempts ?? [],
    next_payment_attempt: iso(row.next_payment_attempt),
    payment_id: row.payment_id ?? null,
    hosted_payment_url: row.hosted_payment_url ?? null,
    finalized_at: iso(row.finalized_at),
    paid_at: iso(row.paid_at),
    voided_at: iso(row.voided_at),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
