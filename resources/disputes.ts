import { Static, Type } from '@sinclair/typebox';
import type { DisputeRow } from '../db/disputes';
import { DISPUTE_EVIDENCE_FIELDS, DISPUTE_REASONS, DISPUTE_STATUSES, type DisputeEvidenceField } from '../lib/providers/disputes';
import { iso } from '../lib/timestamps';
import { Resource, Timestamp } from './schemas';

const Amount = Type.Integer({ description: 'minor units' });
const NullableStr = Type.Union([Type.String(), Type.Null()]);

export const DisputeStatusSchema = Type.Union(DISPUTE_STATUSES.map((s) => Type.Literal(s)));
export const DisputeReasonSchema = Type.Union(DISPUTE_REASONS.map((r) => Type.Literal(r)));

/** Every evidence field, null until the merchant gives it. */
export const DisputeEvidenceSchema = Type.Object(
  Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.map((f) => [f, NullableStr])) as Record<DisputeEvidenceField, typeof NullableStr>,
  { additionalProperties: true, description: 'the evidence saved so far (text fields); null where none was given' },
);

export const DisputeBalanceTransactionSchema = Type.Object({
  kind: Type.Union([Type.Literal('withdrawn'), Type.Literal('reinstated')]),
  amount: Type.Integer({ description: 'minor units: what left the balance (withdrawn) or came back (reinstated)' }),
  fee: Type.Integer({ description: 'minor units: the processor\'s dispute fee, with a withdrawal' }),
  currency: Type.String(),
  at: Type.String({ format: 'date-time' }),
}, { additionalProperties: true });

/** A chargeback or inquiry on one of the account's charges, as any processor reported it (docs/disputes.md). */
export const DisputeSchema = Resource('dispute', {
  id: Type.String({ description: 'dp_…' }),
  payment_id: Type.String(),
  charge_id: Type.String(),
  account_id: Type.String(),
  amount: Amount,
  currency: Type.String(),
  reason: DisputeReasonSchema,
  status: DisputeStatusSchema,
  evidence_due_by: Timestamp,
  evidence: DisputeEvidenceSchema,
  evidence_submitted_at: Timestamp,
  is_inquiry: Type.Boolean({ description: 'an inquiry or early fraud warning (WARNING_* statuses): no money has moved' }),
  processor_dispute_id: Type.String(),
  balance_transactions: Type.Array(DisputeBalanceTransactionSchema),
  evidence_details: Type.Object({
    due_by: Timestamp,
    past_due: Type.Boolean({ description: 'the deadline passed without a submission' }),
    has_evidence: Type.Boolean({ description: 'some evidence is saved' }),
    submission_count: Type.Integer({ minimum: 0, maximum: 1, description: 'evidence is submitted once' }),
  }, { additionalProperties: true }),
  payment_provider_config_id: Type.String(),
  created_at: Timestamp,
  updated_at: Timestamp,
  temporal: Type.Optional(Type.Object({
    workflow_id: Type.String(), namespace: Type.String(), ui_url: Type.String({ description: 'the workflow\'s page in the Temporal UI' }),
  }, { description: 'the dispute\'s workflow, for operators (on the API\'s answers, not in events)' })),
});

export type Dispute = Static<typeof DisputeSchema>;

/** A dispute as the API shows it and its events carry it; the route adds `temporal`. */
export function serializeDispute(row: DisputeRow): Dispute {
  const saved = row.evidence ?? {};
  const evidence = Object.fromEntries(DISPUTE_EVIDENCE_FIELDS.map((f) => [f, saved[f] ?? null])) as Dispute['evidence'];
  const dueBy = iso(row.evidence_due_by);
  return {
    object: 'dispute',
    id: row.id,
    payment_id: row.payment_id,
    charge_id: row.charge_id,
    account_id: row.account_id,
    amount: Number(row.amount),
    currency: row.currency,
    reason: row.reason,
    status: row.status,
    evidence_due_by: dueBy,
    evidence,
    evidence_submitted_at: iso(row.evidence_submitted_at),
    is_inquiry: row.is_inquiry,
    processor_dispute_id: row.processor_dispute_id,
    balance_transactions: (row.balance_transactions ?? []).map((t) => ({
      kind: t.kind, amount: Number(t.amount), fee: Number(t.fee), currency: t.currency, at: iso(t.at) ?? t.at,
    })),
    evidence_details: {
      due_by: dueBy,
      past_due: row.overdue_at != null,
      has_evidence: DISPUTE_EVIDENCE_FIELDS.some((f) => saved[f] !== undefined && saved[f] !== ''),
      submission_count: row.evidence_submitted_at ? 1 : 0,
    },
    payment_provider_config_id: row.payment_provider_config_id,
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}
